package kafka

import (
	"errors"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestMetrics receives one observation per request the gateway answers (or closes
// the connection on): the API's name (kmsg.NameForKey, e.g. "Produce"), how long it
// took, and whether it failed on the gateway's side (ServerErrorCodes in the answer, or
// an error of its own rather than the client's). A client's own mistakes (an unknown topic, a stale generation) are not
// server errors: they are Kafka's protocol flow.
type RequestMetrics interface {
	Request(api string, elapsed time.Duration, serverError bool)
}

// ServerErrorCodes are the Kafka error codes that say the gateway or its store failed,
// not the client: what a deployment alarms on.
var ServerErrorCodes = map[int16]bool{
	unknownServerError:      true,
	storageError:            true,
	requestTimedOut:         true,
	coordinatorNotAvailable: true,
}

// observe reports a dispatched request to the configured metrics.
func (s *Server) observe(key int16, start time.Time, resp kmsg.Response, err error) {
	m := s.cfg.Metrics
	if m == nil {
		return
	}
	failed := err != nil && !errors.Is(err, errClose)
	m.Request(kmsg.NameForKey(key), time.Since(start), failed || (resp != nil && hasServerError(resp)))
}

// hasServerError reports whether any ErrorCode field anywhere in resp (top level,
// per topic, per partition) is one of ServerErrorCodes.
func hasServerError(resp kmsg.Response) bool {
	return serverErrorIn(reflect.ValueOf(resp))
}

var errorCodeType = reflect.TypeOf(int16(0))

func serverErrorIn(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && serverErrorIn(v.Elem())
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return false // record batches, bytes
		}
		for i := range v.Len() {
			if serverErrorIn(v.Index(i)) {
				return true
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Name == "ErrorCode" && f.Type == errorCodeType {
				if ServerErrorCodes[int16(v.Field(i).Int())] {
					return true
				}
				continue
			}
			if serverErrorIn(v.Field(i)) {
				return true
			}
		}
	}
	return false
}
