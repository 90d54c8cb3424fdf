// Package client is Strata's Go SDK over the HTTP contract of docs/API.md: a Client with
// one method per route, and a Producer that batches per partition, keeps key order and
// retries idempotently. For a deployment behind API Gateway (IAM authorization), sign
// the requests with the option of pkg/client/awsauth.
//
// New reads the environment as the strata CLI does: an empty base URL is STRATA_URL's
// (without a scheme, http for a loopback host and https for any other), and without
// WithToken the bearer token is STRATA_TOKEN's, so a service configured for the CLI
// needs no code of its own. An explicit URL or WithToken (even WithToken("")) wins.
//
// To consume as a member of a consumer group (partitions shared with the group's other
// members, commits of the contiguous completed prefix, rebalances followed), use
// httpconsumer.NewGroupConsumer (github.com/stratalog/strata/pkg/httpconsumer) with
// this package's Client: one call, then Run(ctx). It lives there, not here, because it
// runs the consumer runtime (pkg/consumer), and this package imports nothing of the
// server but the contract (pkg/wire, pkg/segment).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// DefaultUserAgent is sent unless WithUserAgent replaces it.
const DefaultUserAgent = "strata-go-client/1"

// Client calls one Strata endpoint. It is safe for concurrent use. A Client does not
// retry: each method is one HTTP exchange (the Producer adds idempotent retries).
type Client struct {
	base      string
	hc        *http.Client
	token     string
	tokenSet  bool
	userAgent string
	// blocks is what the Client has learnt of the server's binary append (blocksUnknown,
	// blocksOn, blocksOff); once known it stays, for every Producer of the Client.
	blocks atomic.Int32
	// maxBody is the largest request body the server takes as the Client has learnt it
	// (wire.HeaderMaxBody on any answer, or a 413 to a body it lowers it below), 0
	// while unknown: the Producer caps its requests by it.
	maxBody atomic.Int64
	// marks are the topics' batch marks (wire.HeaderTopicBatch) the Client has
	// received, by topic name: a Producer's request carries its topic's as its floor.
	marks sync.Map
	// counts are the topics' partition counts (wire.HeaderPartitions) the append
	// answers told, by topic name, with when (a seenCount): a Producer follows them
	// instead of describing its topic.
	counts sync.Map
}

// seenCount is a topic's partition count as an answer told it, and when.
type seenCount struct {
	n  int32
	at time.Time
}

// States of Client.blocks.
const (
	blocksUnknown = iota
	blocksOn
	blocksOff
)

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (transport, timeouts, or a request-signing
// transport for API Gateway IAM auth: pkg/client/awsauth signs with SigV4). Its Timeout,
// if any, must exceed the longest Poll wait. The default is a client without timeout:
// contexts bound each call.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithToken sends "Authorization: Bearer token" on every request (strata dev --auth).
// It replaces STRATA_TOKEN; WithToken("") sends no token whatever the environment says.
func WithToken(token string) Option {
	return func(c *Client) { c.token, c.tokenSet = token, true }
}

// Environment variables New reads, the same as the strata CLI's --url and --token.
const (
	EnvURL   = "STRATA_URL"
	EnvToken = "STRATA_TOKEN"
)

// WithUserAgent replaces the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a Client for baseURL (e.g. "http://127.0.0.1:4580" or an API Gateway stage
// URL; a path prefix is kept), or for STRATA_URL when baseURL is empty; without
// WithToken it sends STRATA_TOKEN's token, if set.
func New(baseURL string, opts ...Option) (*Client, error) {
	if baseURL == "" {
		baseURL = CompleteURL(os.Getenv(EnvURL))
		if baseURL == "" {
			return nil, fmt.Errorf("strata: no base URL: pass one to New or set %s", EnvURL)
		}
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("strata: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("strata: base URL %q: want http(s)://host[:port][/prefix]", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("strata: base URL %q: no query or fragment allowed", baseURL)
	}
	c := &Client{base: strings.TrimRight(u.String(), "/"), hc: &http.Client{}, userAgent: DefaultUserAgent}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	if !c.tokenSet {
		c.token = os.Getenv(EnvToken)
	}
	return c, nil
}

// CompleteURL completes an address without a scheme as the CLI's --url and New's
// STRATA_URL take it: http for a loopback host (strata dev's 127.0.0.1:4580), https for
// any other; an empty address or one with a scheme is returned as is.
func CompleteURL(u string) string {
	if u == "" || strings.Contains(u, "://") {
		return u
	}
	host := u
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host = host[:i]
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		return "http://" + u
	}
	return "https://" + u
}

// CreateTopic creates a topic and returns it; ErrTopicExists if the name is taken.
func (c *Client) CreateTopic(ctx context.Context, name string, cfg TopicConfig) (*Topic, error) {
	req := wire.TopicCreate{Name: name, Partitions: cfg.Partitions}
	if cfg.Retention != 0 {
		ms := cfg.Retention.Milliseconds()
		req.RetentionMs = &ms
	}
	if cfg.RetentionPin != 0 {
		ms := cfg.RetentionPin.Milliseconds()
		req.RetentionPinMs = &ms
	}
	if cfg.LogAppendTime {
		req.TimestampType = wire.TimestampLogAppendTime
	}
	req.CleanupPolicy = cfg.Cleanup
	req.MinCompactionLagMs, req.MaxCompactionLagMs, req.DeleteRetentionMs = optMillis(cfg.MinCompactionLag), optMillis(cfg.MaxCompactionLag), optMillis(cfg.DeleteRetention)
	var w wire.Topic
	if err := c.doJSON(ctx, http.MethodPost, "/v1/topics", nil, req, &w); err != nil {
		return nil, fmt.Errorf("strata: create topic %q: %w", name, err)
	}
	return fromWireTopic(w), nil
}

// DescribeTopic returns a topic with each partition's log start offset and high
// watermark; ErrNotFound if it does not exist.
func (c *Client) DescribeTopic(ctx context.Context, name string) (*Topic, error) {
	var w wire.Topic
	if err := c.doJSON(ctx, http.MethodGet, "/v1/topics/"+seg(name), nil, nil, &w); err != nil {
		return nil, fmt.Errorf("strata: describe topic %q: %w", name, err)
	}
	return fromWireTopic(w), nil
}

// OffsetsForTime returns, per partition of topic, the first offset appended at or after
// t (the high watermark when none was), resolved by the server from its index: where a
// read that starts from a time begins.
func (c *Client) OffsetsForTime(ctx context.Context, topic string, t time.Time) ([]TimeOffset, error) {
	var w wire.OffsetsResponse
	q := url.Values{"timestamp_ms": {strconv.FormatInt(max(t.UnixMilli(), 0), 10)}}
	if err := c.doJSON(ctx, http.MethodGet, "/v1/topics/"+seg(topic)+"/offsets", q, nil, &w); err != nil {
		return nil, fmt.Errorf("strata: offsets of topic %q at %s: %w", topic, t.UTC().Format(time.RFC3339), err)
	}
	out := make([]TimeOffset, len(w.Partitions))
	for i, p := range w.Partitions {
		out[i] = TimeOffset(p)
	}
	return out, nil
}

// TimeOffset is a partition's first offset appended at or after a time.
type TimeOffset struct {
	Partition int32
	Offset    int64
}

// ListTopics returns the names of the topics the caller may describe.
func (c *Client) ListTopics(ctx context.Context) ([]string, error) {
	var w wire.TopicList
	if err := c.doJSON(ctx, http.MethodGet, "/v1/topics", nil, nil, &w); err != nil {
		return nil, fmt.Errorf("strata: list topics: %w", err)
	}
	return w.Topics, nil
}

// AppendOptions are optional parameters of Append.
type AppendOptions struct {
	// IdempotencyKey (1–128 characters), when set, makes a retry with the same key and
	// the same records return the first call's offsets and append nothing twice.
	IdempotencyKey string
}

// Append appends records and returns where each landed, in request order, once they
// are durable. When some partitions failed (503 with results), it returns the results
// (failed ones with Err set) together with the *APIError. With an IdempotencyKey, Go's
// HTTP transport may itself resend the request once if a kept-alive connection drops
// before the answer; the key makes that safe. Without one, a transport error leaves it
// unknown whether the records were appended.
//
// Append speaks JSON: the server places records without a Partition and stamps those
// without a Timestamp, and a caller's retry with the same key sends the same bytes.
// The Producer, which places and stamps records itself, sends the binary format.
func (c *Client) Append(ctx context.Context, topic string, recs []Record, opt AppendOptions) ([]Result, error) {
	body, err := encodeAppend(recs, nil)
	if err != nil {
		return nil, fmt.Errorf("strata: append to %q: %w", topic, err)
	}
	res, err := c.appendBody(ctx, topic, body, len(recs), appendIdem{key: opt.IdempotencyKey, attempt: -1})
	if err != nil {
		return res, fmt.Errorf("strata: append to %q: %w", topic, err)
	}
	return res, nil
}

// encodeAppend encodes an append request body; partition, when non-nil, places every
// record there.
func encodeAppend(recs []Record, partition *int32) ([]byte, error) {
	w := wire.Append{Records: make([]wire.Record, len(recs))}
	for i, r := range recs {
		w.Records[i] = toWire(r, partition)
	}
	return json.Marshal(w)
}

// appendBody sends a pre-encoded append body of n records, so a retry sends the very
// same bytes, with idem's headers (appendIdem.headers).
func (c *Client) appendBody(ctx context.Context, topic string, body []byte, n int, idem appendIdem) ([]Result, error) {
	hdr := map[string]string{}
	idem.headers(hdr)
	status, h, resp, err := c.exchange(ctx, http.MethodPost, "/v1/topics/"+seg(topic)+"/records", nil, body, hdr)
	if err != nil {
		return nil, err
	}
	if status/100 != 2 {
		apiErr, extra := decodeAPIError(status, h, resp)
		if len(extra.Results) != n {
			return nil, apiErr
		}
		return fromWireResults(extra.Results), apiErr
	}
	var w wire.AppendResponse
	if err := decodeBody(resp, &w); err != nil {
		return nil, err
	}
	if len(w.Results) != n {
		return nil, fmt.Errorf("%w: %d results for %d records", ErrBadResponse, len(w.Results), n)
	}
	res := fromWireResults(w.Results)
	for i, r := range res {
		if r.Err != nil {
			return nil, fmt.Errorf("%w: result %d of a 200 carries an error", ErrBadResponse, i)
		}
	}
	return res, nil
}

// resultError is the *APIError of one failed partition inside a partially failed
// append, which carries a code but no status of its own.
func resultError(obj map[string]any) *APIError {
	e := &APIError{}
	e.fill(obj)
	e.Status = statusForCode(e.Code)
	return e
}

// appendBlocks sends a binary append body (wire.AppendRequest) and returns the answer's
// per-frame results. A non-2xx answer is an *APIError, returned with the "blocks" extra
// of a partial failure if there is one. It neither checks the results against the
// frames nor learns from the answer whether the server speaks the format: the Producer
// does both.
func (c *Client) appendBlocks(ctx context.Context, topic string, body []byte, idem appendIdem) ([]wire.BlockResult, error) {
	hdr := map[string]string{"Content-Type": wire.ContentTypeBlocks}
	idem.headers(hdr)
	status, h, resp, err := c.exchange(ctx, http.MethodPost, "/v1/topics/"+seg(topic)+"/records", nil, body, hdr)
	if err != nil {
		return nil, err
	}
	if status/100 != 2 {
		apiErr, extra := decodeAPIError(status, h, resp)
		return extra.Blocks, apiErr
	}
	var w wire.AppendBlocksResponse
	if err := decodeBody(resp, &w); err != nil {
		return nil, err
	}
	return w.Blocks, nil
}

// appendIdem is how one attempt of an append is idempotent: its Idempotency-Key (none:
// not idempotent), which attempt of the request it is (negative: not said), and for a
// producer session's request (fenced idempotency, wire.HeaderIdempotency) the time
// since its first attempt was sent.
type appendIdem struct {
	key     string
	attempt int
	// producer marks a Producer's request: the key is wire.ProducerRequestKey, attempt
	// is never negative, and elapsed is sent on every attempt above 0.
	producer bool
	elapsed  time.Duration
	// floor is a producer request's batch floor, the same on every attempt.
	floor wire.BatchMark
}

// headers sets the attempt's idempotency headers: Idempotency-Key and, when attempt is
// not negative, which attempt this is (wire.HeaderAttempt): the Producer, which knows
// when it sent no earlier attempt, says 0 so the server reads nothing before appending.
// A Producer's request also says wire.IdempotencyProducer (the server keeps no claim
// per request) and, on a retry, wire.HeaderRetryElapsed, so that the server searches
// the log for the earlier attempts from the first send on. A caller of Append may
// repeat a key itself, so Append sends neither an attempt nor the producer mode: its
// key is claimed.
func (a appendIdem) headers(hdr map[string]string) {
	if a.key == "" {
		return
	}
	hdr["Idempotency-Key"] = a.key
	if a.attempt >= 0 {
		hdr[wire.HeaderAttempt] = strconv.Itoa(a.attempt)
	}
	if a.producer && a.attempt >= 0 {
		hdr[wire.HeaderIdempotency] = wire.IdempotencyProducer
		hdr[wire.HeaderBatchFloor] = a.floor.String()
		if a.attempt > 0 {
			hdr[wire.HeaderRetryElapsed] = wire.FormatRetryElapsed(a.elapsed)
		}
	}
}

func fromWireResults(ws []wire.Result) []Result {
	res := make([]Result, len(ws))
	for i, w := range ws {
		res[i].Partition = w.Partition
		switch {
		case w.Error != nil:
			res[i].Err = resultError(w.Error)
		case w.Offset != nil:
			res[i].Offset = *w.Offset
		default:
			res[i].Err = fmt.Errorf("%w: result %d has neither offset nor error", ErrBadResponse, i)
		}
	}
	return res
}

// Poll reads records of one partition from offset. At the high watermark it returns no
// records (after waiting up to opt.Wait); outside [log start, high watermark] it fails
// with ErrOffsetOutOfRange, whose *APIError carries both bounds. It asks for the binary
// answer (stored blocks, no base64) and reads JSON from a server that answers JSON. A
// binary answer holds whole stored commits, so it may return somewhat more records than
// opt.MaxRecords; NextOffset is always the offset to poll next.
//
// topic may be a TopicRef: a group member polls the incarnation its lease is of, and
// gets ErrFenced once that incarnation is deleted.
func (c *Client) Poll(ctx context.Context, topic string, partition int32, offset int64, opt PollOptions) (*PollResult, error) {
	name, inc := splitRef(topic)
	q := url.Values{"offset": {strconv.FormatInt(offset, 10)}}
	if inc != "" {
		q.Set("incarnation", inc)
	}
	if opt.MaxRecords != 0 {
		q.Set("max_records", strconv.Itoa(opt.MaxRecords))
	}
	if opt.MaxBytes != 0 {
		q.Set("max_bytes", strconv.Itoa(opt.MaxBytes))
	}
	if opt.Wait > 0 {
		ms := (opt.Wait + time.Millisecond - 1) / time.Millisecond
		q.Set("wait_ms", strconv.FormatInt(int64(ms), 10))
	}
	path := fmt.Sprintf("/v1/topics/%s/partitions/%d/records", seg(name), partition)
	status, h, body, err := c.exchange(ctx, http.MethodGet, path, q, nil, map[string]string{"Accept": pollAccept})
	if err == nil && status/100 != 2 {
		err, _ = decodeAPIError(status, h, body)
	}
	var res *PollResult
	if err == nil {
		res, err = decodePoll(h.Get("Content-Type"), body, offset)
	}
	if err != nil {
		return nil, fmt.Errorf("strata: poll %s/%d@%d: %w", topic, partition, offset, err)
	}
	return res, nil
}

// pollAccept asks for the binary poll answer and takes JSON from a server without it.
const pollAccept = wire.ContentTypeBlocks + ", application/json;q=0.5"

// decodePoll decodes a 2xx poll answer of the given Content-Type: the binary form
// (wire.ContentTypeBlocks), else JSON.
func decodePoll(contentType string, body []byte, offset int64) (*PollResult, error) {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && mt == wire.ContentTypeBlocks {
		return decodePollBlocks(body, offset)
	}
	var w wire.PollResponse
	if err := decodeBody(body, &w); err != nil {
		return nil, err
	}
	res := &PollResult{NextOffset: w.NextOffset, HighWatermark: w.HighWatermark, LogStartOffset: w.LogStartOffset,
		Records: make([]PolledRecord, len(w.Records))}
	for i, wr := range w.Records {
		r, err := fromWirePolled(wr)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadResponse, err)
		}
		res.Records[i] = r
	}
	return res, nil
}

// decodePollBlocks decodes a binary poll answer (wire.DecodePoll) polled at offset.
// Its ranges are whole stored commits: records below offset (the first range may start
// below it) are skipped, and so are any at or past the answer's next offset, so
// NextOffset is always past the last record returned. Ranges must ascend
// without overlapping (gaps are skipped duplicate commits). A malformed or corrupt
// answer wraps ErrBadResponse and the wire or segment error. Records alias body.
func decodePollBlocks(body []byte, offset int64) (*PollResult, error) {
	pb, err := wire.DecodePoll(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	res := &PollResult{NextOffset: pb.NextOffset, HighWatermark: pb.HighWatermark, LogStartOffset: pb.LogStartOffset}
	var recs []segment.Record
	end := int64(0)
	for i, r := range pb.Ranges {
		if i > 0 && r.BaseOffset < end {
			return nil, fmt.Errorf("%w: range %d starts at %d, inside the previous one (ends at %d)", ErrBadResponse, i, r.BaseOffset, end)
		}
		if recs, err = segment.AppendBlocksRecords(recs[:0], r.Data, r.BaseOffset); err != nil {
			return nil, fmt.Errorf("%w: range %d at offset %d: %w", ErrBadResponse, i, r.BaseOffset, err)
		}
		end = r.BaseOffset + int64(len(recs))
		for _, sr := range recs {
			if sr.Offset < offset || sr.Offset >= pb.NextOffset {
				continue
			}
			res.Records = append(res.Records, fromSegment(sr))
		}
	}
	if res.Records == nil {
		res.Records = []PolledRecord{}
	}
	return res, nil
}

// Lease takes over the lease of (group, topic, partition) for member if it is free or
// expired, incrementing the generation; ErrLeaseHeld (with Owner and LeaseExpiresAt on
// the *APIError) if another member holds it. A zero ttl leaves the server default (30 s).
func (c *Client) Lease(ctx context.Context, group, topic string, partition int32, member string, ttl time.Duration) (*Lease, error) {
	l, err := c.lease(ctx, group, topic, partition, wire.LeaseRequest{Member: member, TTLMs: ttlMs(ttl)})
	if err != nil {
		return nil, fmt.Errorf("strata: lease %s/%s/%d for %q: %w", group, topic, partition, member, err)
	}
	return l, nil
}

// RenewLease moves the expiry of member's lease at generation; ErrFenced if member no
// longer holds it at that generation. topic may be the lease's TopicRef (as for
// Release, Commit and the parked-row calls): then a lease of a deleted incarnation is
// ErrFenced even when the name has a live incarnation again.
func (c *Client) RenewLease(ctx context.Context, group, topic string, partition int32, member string, generation int64, ttl time.Duration) (*Lease, error) {
	name, inc := splitRef(topic)
	l, err := c.lease(ctx, group, name, partition, wire.LeaseRequest{Member: member, Generation: &generation, TTLMs: ttlMs(ttl), Incarnation: inc})
	if err != nil {
		return nil, fmt.Errorf("strata: renew lease %s/%s/%d gen %d for %q: %w", group, topic, partition, generation, member, err)
	}
	return l, nil
}

func ttlMs(ttl time.Duration) *int64 {
	if ttl == 0 {
		return nil
	}
	ms := ttl.Milliseconds()
	return &ms
}

func (c *Client) lease(ctx context.Context, group, topic string, partition int32, req wire.LeaseRequest) (*Lease, error) {
	var w wire.Lease
	if err := c.doJSON(ctx, http.MethodPost, groupPath(group, topic, partition, "lease"), nil, req, &w); err != nil {
		return nil, err
	}
	return &Lease{Generation: w.Generation, ExpiresAt: time.UnixMilli(w.LeaseExpiresAtMs), CommittedOffset: w.CommittedOffset,
		Completed: w.Completed, Incarnation: w.Incarnation}, nil
}

// Release gives up member's lease at generation; ErrFenced if the generation is obsolete.
// topic may be the lease's TopicRef.
func (c *Client) Release(ctx context.Context, group, topic string, partition int32, member string, generation int64) error {
	name, inc := splitRef(topic)
	err := c.doJSON(ctx, http.MethodDelete, groupPath(group, name, partition, "lease"), nil,
		wire.Release{Member: member, Generation: generation, Incarnation: inc}, nil)
	if err != nil {
		return fmt.Errorf("strata: release %s/%s/%d gen %d for %q: %w", group, topic, partition, generation, member, err)
	}
	return nil
}

// Commit stores nextOffset (the next offset to read) as the group's position, fenced by
// generation, and returns the committed offset. ErrFenced: not the owner at that
// generation; ErrStaleCommit: below the committed offset; ErrBeyondHighWatermark: above
// the high watermark. completed are offset ranges above nextOffset already handled
// (wire.CheckCompleted), which the next lease of the partition returns. topic may be
// the lease's TopicRef.
func (c *Client) Commit(ctx context.Context, group, topic string, partition int32, member string, generation, nextOffset int64, completed ...wire.OffsetRange) (int64, error) {
	return c.CommitAt(ctx, group, topic, partition, member, generation, nextOffset, CommitOptions{Completed: completed})
}

// CommitOptions are the optional parts of a commit (CommitAt).
type CommitOptions struct {
	// Metadata is stored with the position and shown by DescribeGroup (Kafka's
	// OffsetCommit metadata): at most wire.MaxCommitMetadata bytes of UTF-8.
	Metadata string
	// AllowBackward accepts an offset below the committed one from the lease's owner at
	// its generation (a seek-and-commit); without it that is ErrStaleCommit.
	AllowBackward bool
	// Completed are the offsets above nextOffset already handled, as Commit's.
	Completed []wire.OffsetRange
}

// CommitAt is Commit with options: metadata stored with the position, and a backward
// move when asked. An obsolete generation is ErrFenced whatever it asks.
func (c *Client) CommitAt(ctx context.Context, group, topic string, partition int32, member string, generation, nextOffset int64, opts CommitOptions) (int64, error) {
	var w wire.CommitResponse
	name, inc := splitRef(topic)
	err := c.doJSON(ctx, http.MethodPost, groupPath(group, name, partition, "commit"), nil,
		wire.Commit{Member: member, Generation: generation, NextOffset: nextOffset, Completed: opts.Completed, Incarnation: inc,
			Metadata: opts.Metadata, AllowBackward: opts.AllowBackward}, &w)
	if err != nil {
		return 0, fmt.Errorf("strata: commit %s/%s/%d gen %d @%d: %w", group, topic, partition, generation, nextOffset, err)
	}
	return w.CommittedOffset, nil
}

// DescribeGroup returns the group's position and lease on every partition it has
// leased or committed; ErrNotFound for an unknown group.
func (c *Client) DescribeGroup(ctx context.Context, group string) (*Group, error) {
	var w wire.Group
	if err := c.doJSON(ctx, http.MethodGet, "/v1/groups/"+seg(group), nil, nil, &w); err != nil {
		return nil, fmt.Errorf("strata: describe group %q: %w", group, err)
	}
	g := &Group{Name: w.Group, Partitions: make([]GroupPartition, len(w.Partitions))}
	for i, p := range w.Partitions {
		gp := GroupPartition{Topic: p.Topic, Partition: p.Partition, CommittedOffset: p.CommittedOffset,
			HighWatermark: p.HighWatermark, Generation: p.Generation,
			SecondsToDataLoss: p.SecondsToDataLoss, RecordsLost: p.RecordsLost, ParkedKeys: p.ParkedKeys, Metadata: p.Metadata}
		if p.LagRecords != nil {
			gp.LagRecords = *p.LagRecords
		}
		if p.LagSeconds != nil {
			gp.LagSeconds = *p.LagSeconds
		}
		if p.Owner != nil {
			gp.Owner = *p.Owner
		}
		if p.LeaseExpiresAtMs != nil {
			gp.LeaseExpiresAt = time.UnixMilli(*p.LeaseExpiresAtMs)
		}
		g.Partitions[i] = gp
	}
	return g, nil
}

// ResetGroup sets the group's committed offset on every partition of topic.
// ErrGroupActive if the group holds a live lease on the topic; ErrOffsetOutOfRange for
// an offset outside a partition's readable range.
func (c *Client) ResetGroup(ctx context.Context, group, topic string, to ResetTarget) ([]PartitionOffset, error) {
	var w wire.ResetResponse
	path := "/v1/groups/" + seg(group) + "/topics/" + seg(topic) + "/reset"
	if err := c.doJSON(ctx, http.MethodPost, path, nil, wireReset{To: to}, &w); err != nil {
		return nil, fmt.Errorf("strata: reset group %q on %q: %w", group, topic, err)
	}
	out := make([]PartitionOffset, len(w.Partitions))
	for i, p := range w.Partitions {
		out[i] = PartitionOffset{Partition: p.Partition, CommittedOffset: p.CommittedOffset}
	}
	return out, nil
}

// Health returns nil when the server answers {"status": "ok"}.
func (c *Client) Health(ctx context.Context) error {
	var w wire.Health
	if err := c.doJSON(ctx, http.MethodGet, "/v1/health", nil, nil, &w); err != nil {
		return fmt.Errorf("strata: health: %w", err)
	}
	if w.Status != "ok" {
		return fmt.Errorf("strata: health: %w: status %q", ErrBadResponse, w.Status)
	}
	return nil
}

func fromWireTopic(w wire.Topic) *Topic {
	t := &Topic{Name: w.Name, Partitions: w.Partitions, Retention: time.Duration(w.RetentionMs) * time.Millisecond,
		RetentionPin: time.Duration(w.RetentionPinMs) * time.Millisecond, LogAppendTime: w.TimestampType == wire.TimestampLogAppendTime,
		Cleanup: w.CleanupPolicy, MinCompactionLag: time.Duration(w.MinCompactionLagMs) * time.Millisecond,
		MaxCompactionLag: time.Duration(w.MaxCompactionLagMs) * time.Millisecond, DeleteRetention: time.Duration(w.DeleteRetentionMs) * time.Millisecond}
	for _, p := range w.PartitionInfo {
		t.PartitionInfo = append(t.PartitionInfo, PartitionInfo(p))
	}
	return t
}

// TopicRef names the topic incarnation a lease is of (Lease.Incarnation,
// MemberLease.Incarnation): "name#incarnation", or the name alone when incarnation is
// "". The calls of a lease's holder (RenewLease, Release, Commit, Poll and the
// parked-row calls) take it as their topic: they send the name in the path and the
// incarnation beside it, and are refused with ErrFenced once that incarnation is
// deleted, even when the name has a live one again, so a member still running against
// a deleted topic never acts on the topic created again under the name. Derive the
// keys of a record's one-off actions (dead-letter and parking appends) from it too.
func TopicRef(name, incarnation string) string {
	if incarnation == "" {
		return name
	}
	return name + "#" + incarnation
}

// splitRef splits a TopicRef into the name and the incarnation ("" for a name).
func splitRef(topic string) (name, incarnation string) {
	name, incarnation, _ = strings.Cut(topic, "#")
	return name, incarnation
}

func groupPath(group, topic string, partition int32, op string) string {
	return fmt.Sprintf("/v1/groups/%s/topics/%s/partitions/%d/%s", seg(group), seg(topic), partition, op)
}

// seg escapes one path segment (names are restricted, but a bad one must not change
// the route).
func seg(s string) string { return url.PathEscape(s) }

// doJSON sends in (JSON, when non-nil) and decodes a 2xx answer into out (when
// non-nil); a non-2xx answer is an *APIError.
func (c *Client) doJSON(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	status, h, resp, err := c.exchange(ctx, method, path, q, body, nil)
	if err != nil {
		return err
	}
	if status/100 != 2 {
		apiErr, _ := decodeAPIError(status, h, resp)
		return apiErr
	}
	if out == nil {
		return nil
	}
	return decodeBody(resp, out)
}

func decodeBody(b []byte, out any) error {
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%w: %v", ErrBadResponse, err)
	}
	return nil
}

// exchange makes one HTTP request and reads the whole answer (an error answer up to
// maxErrorBody bytes).
func (c *Client) exchange(ctx context.Context, method, path string, q url.Values, body []byte, hdr map[string]string) (int, http.Header, []byte, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if hdr[wire.HeaderIdempotency] == wire.IdempotencyProducer {
		// An attempt of a producer request must reach the server at most once from
		// here: Go's transport resends a POST with an Idempotency-Key by itself when a
		// reused connection fails before the answer, and a resent first attempt, which
		// nothing fences, would append the records twice. Without GetBody the transport
		// cannot resend it; the Producer retries with the next attempt instead.
		req.GetBody = nil
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	if n := wire.ParseMaxBody(resp.Header.Get(wire.HeaderMaxBody)); n > 0 {
		c.maxBody.Store(int64(n))
	}
	c.noteMark(path, resp.Header.Get(wire.HeaderTopicBatch))
	c.noteCount(path, resp.Header.Get(wire.HeaderPartitions))
	var r io.Reader = resp.Body
	if resp.StatusCode/100 != 2 {
		r = io.LimitReader(resp.Body, maxErrorBody)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("read %s %s answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	}
	return resp.StatusCode, resp.Header, b, nil
}

// tooLarge reports whether err refuses a request body of n bytes as too large (413)
// and, if so, makes sure the Client's maxBody is below n: the server's stated limit,
// else half of n.
func (c *Client) tooLarge(err error, n int) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusRequestEntityTooLarge {
		return false
	}
	for {
		m := c.maxBody.Load()
		if m > 0 && m < int64(n) {
			return true
		}
		if c.maxBody.CompareAndSwap(m, int64(n/2)) {
			return true
		}
	}
}

// IsRetryable reports whether a failed call may be repeated as is: a 429 or 503 (or a
// gateway's 502/504), a transport error or timeout, or a garbled answer. It is false for
// other *APIErrors, for client-side validation errors and for a cancelled context.
// Repeat an Append only with an Idempotency-Key.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Temporary()
	}
	return !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrPayloadTooLarge)
}

// noteMark records the batch mark v (wire.HeaderTopicBatch) of an answer to a request
// on path about a topic (/v1/topics/{topic}...): the highest of the topic's incarnation,
// or the mark of another incarnation than the one kept (the topic was created again).
// A value that is not a mark is ignored.
func (c *Client) noteMark(path, v string) {
	topic := topicOfPath(path)
	if topic == "" || v == "" {
		return
	}
	m, err := wire.ParseBatchMark(v)
	if err != nil {
		return
	}
	for {
		old, loaded := c.marks.LoadOrStore(topic, m)
		if !loaded {
			return
		}
		o := old.(wire.BatchMark)
		if o.Incarnation == m.Incarnation && o.Batch >= m.Batch {
			return
		}
		if c.marks.CompareAndSwap(topic, old, m) {
			return
		}
	}
}

// topicOfPath is the topic a request path is about (/v1/topics/{topic}...), or "".
func topicOfPath(path string) string {
	rest, ok := strings.CutPrefix(path, "/v1/topics/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	topic, err := url.PathUnescape(name)
	if err != nil {
		return ""
	}
	return topic
}

// noteCount records the partition count v (wire.HeaderPartitions) of an answer to a
// request on path about a topic, with the time it came. A value that is not a count is
// ignored.
func (c *Client) noteCount(path, v string) {
	if v == "" {
		return
	}
	topic, n := topicOfPath(path), wire.ParsePartitions(v)
	if topic == "" || n == 0 {
		return
	}
	c.counts.Store(topic, seenCount{n: n, at: time.Now()})
}

// countSince is topic's partition count as the last answer that told it said, if one
// came after since.
func (c *Client) countSince(topic string, since time.Time) (int32, bool) {
	v, ok := c.counts.Load(topic)
	if !ok {
		return 0, false
	}
	s := v.(seenCount)
	return s.n, s.at.After(since)
}

// batchFloor is the floor (wire.HeaderBatchFloor) of a request on topic first sent now:
// the topic's batch mark as the Client last received it, or the zero mark.
func (c *Client) batchFloor(topic string) wire.BatchMark {
	if v, ok := c.marks.Load(topic); ok {
		return v.(wire.BatchMark)
	}
	return wire.BatchMark{}
}
