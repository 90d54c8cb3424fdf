package apigwtest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// EventContext is what API Gateway adds to a request when it builds the event: the
// matched route, the API's identity and the authenticated caller.
type EventContext struct {
	// RouteKey is the matched route ("POST /v1/topics/{topic}/records"); "" is "$default".
	RouteKey string
	// PathParameters are the route's parameters by name (nil for $default).
	PathParameters map[string]string
	// APIID, Stage ("" is "$default") and AccountID name the API.
	APIID, Stage, AccountID string
	// Caller, when non-nil, fills requestContext.authorizer.iam (an IAM-authorized route).
	Caller *Principal
	// Time is when API Gateway received the request (zero: time.Now).
	Time time.Time
	// RequestID is requestContext.requestId ("" for a random one).
	RequestID string
}

// NewEvent builds the payload format 2.0 event API Gateway's HTTP API delivers for r,
// whose body has already been read: header names lowercased and repeated values joined
// with commas, cookies apart, the query both raw and parsed, and a body that is not text
// (by Content-Type, or not valid UTF-8) base64-encoded.
func NewEvent(r *http.Request, body []byte, ec EventContext) events.APIGatewayV2HTTPRequest {
	if ec.RouteKey == "" {
		ec.RouteKey = "$default"
	}
	if ec.Stage == "" {
		ec.Stage = "$default"
	}
	if ec.Time.IsZero() {
		ec.Time = time.Now()
	}
	if ec.RequestID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		ec.RequestID = hex.EncodeToString(b[:])
	}
	headers := map[string]string{}
	var cookies []string
	for k, vs := range r.Header {
		lk := strings.ToLower(k)
		if lk == "cookie" {
			for _, v := range vs {
				for c := range strings.SplitSeq(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[lk] = strings.Join(vs, ",")
	}
	headers["host"] = r.Host
	if len(body) > 0 {
		headers["content-length"] = fmt.Sprint(len(body))
	}
	sourceIP := r.RemoteAddr
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		sourceIP = h
	}
	headers["x-forwarded-for"] = sourceIP
	headers["x-forwarded-proto"] = "https"
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       ec.RouteKey,
		RawPath:        path,
		RawQueryString: r.URL.RawQuery,
		Cookies:        cookies,
		Headers:        headers,
		PathParameters: ec.PathParameters,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     ec.RouteKey,
			AccountID:    ec.AccountID,
			Stage:        ec.Stage,
			RequestID:    ec.RequestID,
			APIID:        ec.APIID,
			DomainName:   r.Host,
			DomainPrefix: strings.SplitN(r.Host, ".", 2)[0],
			Time:         ec.Time.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    ec.Time.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if q := r.URL.Query(); len(q) > 0 {
		ev.QueryStringParameters = make(map[string]string, len(q))
		for k, vs := range q {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	if p := ec.Caller; p != nil {
		account := p.AccountID
		if account == "" {
			account = ec.AccountID
		}
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
				AccessKey:      p.AccessKeyID,
				AccountID:      account,
				CallerID:       orDefault(p.CallerID, p.AccessKeyID),
				PrincipalOrgID: p.PrincipalOrgID,
				UserARN:        p.ARN,
				UserID:         orDefault(p.UserID, p.AccessKeyID),
			},
		}
	}
	if len(body) > 0 {
		if isText(r.Header.Get("Content-Type"), body) {
			ev.Body = string(body)
		} else {
			ev.Body = base64.StdEncoding.EncodeToString(body)
			ev.IsBase64Encoded = true
		}
	}
	return ev
}

// isText reports whether API Gateway passes body as text: a text/*, JSON, XML,
// JavaScript or form Content-Type, and valid UTF-8.
func isText(contentType string, body []byte) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	text := strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-www-form-urlencoded":
		text = true
	}
	return text && isUTF8(body)
}

func isUTF8(b []byte) bool { return strings.ToValidUTF8(string(b), "\uFFFD") == string(b) }

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// WriteResponse writes a function's payload format 2.0 answer as API Gateway does: the
// status (200 when the function left it 0), headers, multi-value headers and cookies,
// and the body, base64-decoded when flagged. A body flagged base64 that is not is API
// Gateway's 500.
func WriteResponse(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			writeMessage(w, http.StatusInternalServerError, "", "Internal Server Error")
			return
		}
		body = b
	}
	h := w.Header()
	keys := make([]string, 0, len(resp.MultiValueHeaders))
	for k := range resp.MultiValueHeaders {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range resp.MultiValueHeaders[k] {
			h.Add(k, v)
		}
	}
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	h.Set("Content-Length", fmt.Sprint(len(body)))
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeMessage writes API Gateway's own error answer: {"message": msg} with
// x-amzn-ErrorType when errType is set.
func writeMessage(w http.ResponseWriter, status int, errType, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if errType != "" {
		h.Set("X-Amzn-Errortype", errType)
	}
	b, _ := json.Marshal(map[string]string{"message": msg})
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
