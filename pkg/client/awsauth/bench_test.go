package awsauth_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/client/awsauth"
)

// BenchmarkSign: what signing adds to one request (hashing the body, deriving the key,
// the HMACs), without the network: a base transport that answers at once.
func BenchmarkSign(b *testing.B) {
	ok := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		_, _ = io.Copy(io.Discard, r.Body)
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{}}, nil
	})
	tr := awsauth.NewTransport(static(alice), region, ok)
	for _, size := range []int{0, 1 << 10, 3 << 20} {
		body := bytes.Repeat([]byte{7}, size)
		b.Run(fmt.Sprintf("body=%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/v1/topics/orders/records", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/vnd.strata.blocks")
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}
