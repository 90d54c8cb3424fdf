package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/httpapi"
)

// FuzzGuard: for any Host, Origin, Sec-Fetch-Site, method and path, Guard never
// panics; what it lets through has an answerable Host (an IP literal, localhost, a name
// under .localhost or the allowed name) and, unless it is a GET of a console page, no
// foreign Origin and a Sec-Fetch-Site of same-origin or none; what it refuses is 403
// with the contract's error body.
func FuzzGuard(f *testing.F) {
	for _, s := range [][5]string{
		{"127.0.0.1:4580", "", "", "POST", "/v1/topics"},
		{"localhost:4580", "http://localhost:4580", "same-origin", "POST", "/v1/topics"},
		{"evil.example", "", "", "GET", "/v1/topics"},
		{"strata.internal", "http://evil.example", "cross-site", "GET", "/console/"},
		{"[::1]:1", "null", "same-site", "DELETE", "/v1/topics/t"},
		{"a.localhost.", "HTTP://A.LOCALHOST.", "none", "PATCH", "/x"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4])
	}
	passed := false
	h := httpapi.Guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { passed = true }),
		httpapi.LocalGuard{AllowedHosts: []string{"strata.internal"}, PagePrefix: "/console/"})
	f.Fuzz(func(t *testing.T, host, origin, site, method, path string) {
		req := httptest.NewRequest("GET", "/", nil)
		req.Host, req.Method, req.URL.Path = host, method, path
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		passed = false
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if !passed {
			var body struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if w.Code != 403 || json.Unmarshal(w.Body.Bytes(), &body) != nil || body.Error.Code != "forbidden" || body.Error.Message == "" {
				t.Fatalf("refused with %d %q", w.Code, w.Body)
			}
			return
		}
		name := strings.ToLower(host)
		if i := strings.LastIndexByte(name, ':'); i >= 0 && !strings.HasSuffix(name, "]") {
			name = name[:i]
		}
		name = strings.TrimSuffix(name, ".")
		_, ipErr := netip.ParseAddr(strings.Trim(name, "[]"))
		if name != "" && ipErr != nil && name != "localhost" && !strings.HasSuffix(name, ".localhost") && name != "strata.internal" {
			t.Fatalf("Host %q let through", host)
		}
		page := (method == "GET" || method == "HEAD") && strings.HasPrefix(path, "/console/")
		if !page {
			own := strings.ToLower(host)
			if o := strings.ToLower(origin); origin != "" && o != "http://"+own && o != "https://"+own {
				t.Fatalf("Origin %q let through for Host %q", origin, host)
			}
			if site != "" && site != "same-origin" && site != "none" {
				t.Fatalf("Sec-Fetch-Site %q let through", site)
			}
		}
	})
}
