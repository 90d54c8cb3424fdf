package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// LocalGuard configures Guard, the browser-facing protections of a server a developer
// runs on their own machine (`strata dev`): behind API Gateway the Host is the API's
// own domain and every caller signs its requests, so the api function does not use it.
type LocalGuard struct {
	// AllowedHosts are the Host names answered besides IP literals, "localhost" and
	// names under ".localhost" (matched without the port, case-insensitively); "*"
	// answers every Host.
	AllowedHosts []string
	// PagePrefix, when set, is the path prefix of pages a link from another site may
	// open (the console): their GET and HEAD skip the cross-site check, never the Host
	// check.
	PagePrefix string
}

// Guard wraps h with the protections of g, answering what it refuses with the
// contract's error body:
//
//   - DNS rebinding: a Host that is not an IP literal, localhost or an allowed name is
//     403 (a page on a rebound name otherwise reads the whole log through the browser);
//   - cross-site requests: a Sec-Fetch-Site other than same-origin or none, or an
//     Origin other than the server's own (http or https of the request's Host), is 403.
//
// Non-browser clients send neither Origin nor Sec-Fetch-Site and are unaffected.
func Guard(h http.Handler, g LocalGuard) http.Handler {
	hosts := make(map[string]bool, len(g.AllowedHosts))
	anyHost := false
	for _, n := range g.AllowedHosts {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "*" {
			anyHost = true
		}
		hosts[n] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !anyHost && !allowedHost(r.Host, hosts) {
			writeError(w, &apiError{status: http.StatusForbidden, code: codeForbidden,
				message: fmt.Sprintf("Host %q is not answered by this server (allowed: IP addresses, localhost and --allowed-hosts)", r.Host)})
			return
		}
		page := g.PagePrefix != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.HasPrefix(r.URL.Path, g.PagePrefix)
		if !page {
			if e := crossSite(r); e != nil {
				writeError(w, e)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// allowedHost reports whether the host part of a Host header is an IP literal,
// localhost, a name under .localhost or one of hosts.
func allowedHost(hostport string, hosts map[string]bool) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" {
		return true // HTTP/1.0 without Host: no name a browser could have rebound
	}
	if _, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err == nil {
		return true
	}
	return host == "localhost" || strings.HasSuffix(host, ".localhost") || hosts[host]
}

// crossSite refuses a request a browser marks as coming from another origin.
func crossSite(r *http.Request) *apiError {
	refuse := func(why string) *apiError {
		return &apiError{status: http.StatusForbidden, code: codeForbidden,
			message: "cross-site request refused: " + why}
	}
	if v := r.Header.Values("Sec-Fetch-Site"); len(v) > 0 {
		if len(v) > 1 || (v[0] != "same-origin" && v[0] != "none") {
			return refuse(fmt.Sprintf("Sec-Fetch-Site %q", strings.Join(v, ", ")))
		}
	}
	if v := r.Header.Values("Origin"); len(v) > 0 {
		o := strings.ToLower(v[0])
		own := strings.ToLower(r.Host)
		if len(v) > 1 || (o != "http://"+own && o != "https://"+own) {
			return refuse(fmt.Sprintf("Origin %q is not this server's", strings.Join(v, ", ")))
		}
	}
	return nil
}
