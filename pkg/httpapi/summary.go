package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/wire"
)

// summaryRoute answers the console's refresh: every topic and group the caller may
// describe, with partitions, lag, members, settings, parked keys and lag history, in one
// request, so that an idle page costs one request per refresh however many topics and
// groups there are.
const summaryRoute = "GET /v1/summary"

// summaryRoutes registers GET /v1/summary (groups are listed only when the server has a
// GroupAdmin).
func (s *server) summaryRoutes() {
	s.mux.HandleFunc(summaryRoute, s.summary)
}

// topicOps and groupOps are the operations the summary reports per resource.
var (
	topicOps = []string{OpDescribe, OpRead, OpAppend, OpAlter, OpDelete, OpCreate}
	groupOps = []string{OpDescribe, OpConsume, OpReset, OpDelete}
)

func (s *server) summary(w http.ResponseWriter, r *http.Request) {
	p, ok := s.allow(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	out := wire.Summary{Principal: principalJSON(p), Topics: []wire.SummaryTopic{}, Groups: []wire.SummaryGroup{}}
	names, err := s.log.ListTopics(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, name := range names {
		if !p.Allowed(OpDescribe, "topic:"+name) {
			continue
		}
		info, err := s.log.DescribeTopic(ctx, name)
		if notFound(err) {
			continue // deleted since it was listed
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		t := topicJSON(info.Topic)
		st := wire.SummaryTopic{Name: t.Name, Partitions: t.Partitions, RetentionMs: t.RetentionMs, RetentionPinMs: t.RetentionPinMs,
			TimestampType: t.TimestampType, PartitionInfo: make([]wire.SummaryPartition, len(info.Partitions)),
			Allowed: allowedOps(p, "topic:"+name, topicOps)}
		for i, pi := range info.Partitions {
			st.PartitionInfo[i] = wire.SummaryPartition{Partition: pi.Partition, LogStartOffset: pi.LogStartOffset,
				HighWatermark: pi.HighWatermark, Records: pi.HighWatermark - pi.LogStartOffset}
		}
		out.Topics = append(out.Topics, st)
	}
	if s.admin != nil {
		groups, err := s.admin.ListGroups(ctx)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for _, g := range groups {
			if !p.Allowed(OpDescribe, "group:"+g) {
				continue
			}
			sg, err := s.summaryGroup(ctx, p, g)
			if notFound(err) {
				continue // deleted since it was listed
			}
			if err != nil {
				s.fail(w, r, err)
				return
			}
			out.Groups = append(out.Groups, sg)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// summaryGroup is one group of the summary, as its describe, settings, members, parked
// and lag-history routes show it to p.
func (s *server) summaryGroup(ctx context.Context, p *Principal, g string) (wire.SummaryGroup, error) {
	info, err := s.groups.Describe(ctx, g)
	if err != nil {
		return wire.SummaryGroup{}, err
	}
	out := wire.SummaryGroup{Group: g, Members: []wire.SummaryMember{}, Parked: []wire.ParkedKey{},
		LagHistory: []wire.LagHistorySample{}, Allowed: allowedOps(p, "group:"+g, groupOps)}
	var rows []group.Parked
	if s.parker != nil {
		rows, err = s.parker.ListParked(ctx, g)
		if err != nil && !errors.Is(err, group.ErrUnsupported) {
			return out, err
		}
	}
	out.Partitions = groupPartitions(p, info, group.CountParked(rows))
	visible := rows[:0]
	for _, row := range rows {
		if p.Allowed(OpRead, "topic:"+row.Topic) {
			visible = append(visible, row)
		}
	}
	if len(visible) > 0 {
		out.Parked = parkedJSON(visible, s.parkingStarts(ctx, g)).Parked
	}
	st, err := s.admin.GetSettings(ctx, g)
	if err == nil {
		js := settingsJSON(g, st)
		out.Settings = &js
	} else if !notFound(err) {
		return out, err
	}
	members := map[string]*wire.SummaryMember{}
	var order []string
	member := func(id string) *wire.SummaryMember {
		m, ok := members[id]
		if !ok {
			m = &wire.SummaryMember{Member: id, Holds: []wire.TopicPartition{}}
			members[id] = m
			order = append(order, id)
		}
		return m
	}
	if ml, ok := s.members.(MemberList); ok {
		live, err := ml.LiveMembers(ctx, g)
		if err != nil && !notFound(err) {
			return out, err
		}
		for _, m := range live {
			member(m.ID).ExpiresAtMs = m.ExpiresAt.UnixMilli()
		}
	}
	owned := 0
	for _, gp := range out.Partitions {
		if gp.Owner == nil {
			continue
		}
		owned++
		m := member(*gp.Owner)
		m.Holds = append(m.Holds, wire.TopicPartition{Topic: gp.Topic, Partition: gp.Partition})
		m.ExpiresAtMs = max(m.ExpiresAtMs, *gp.LeaseExpiresAtMs)
	}
	for _, id := range order {
		out.Members = append(out.Members, *members[id])
	}
	switch {
	case len(out.Members) == 0:
		out.State = wire.GroupEmpty
	case owned < len(out.Partitions):
		out.State = wire.GroupRebalancing
	default:
		out.State = wire.GroupStable
	}
	if s.lag != nil {
		h, err := s.lag.LagHistory(ctx, g)
		if err != nil && !notFound(err) {
			return out, err
		}
		out.LagHistory = lagTotals(p, h)
	}
	return out, nil
}

// lagTotals sums a lag history over the partitions p may describe: per sample time,
// the records behind added up and the seconds behind the largest.
func lagTotals(p *Principal, h []groupLagSeries) []wire.LagHistorySample {
	at := map[int64]*wire.LagHistorySample{}
	for _, series := range h {
		if !p.Allowed(OpDescribe, "topic:"+series.Topic) {
			continue
		}
		for _, x := range series.Samples {
			ms := x.At.UnixMilli()
			t, ok := at[ms]
			if !ok {
				t = &wire.LagHistorySample{TimestampMs: ms}
				at[ms] = t
			}
			t.LagRecords += x.Records
			t.LagSeconds = max(t.LagSeconds, float64(x.Behind.Milliseconds())/1000)
		}
	}
	out := make([]wire.LagHistorySample, 0, len(at))
	for _, t := range at {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b wire.LagHistorySample) int { return int(min(max(a.TimestampMs-b.TimestampMs, -1), 1)) })
	return out
}

// allowedOps is the subset of ops p may do on resource.
func allowedOps(p *Principal, resource string, ops []string) []string {
	out := []string{}
	for _, op := range ops {
		if p.Allowed(op, resource) {
			out = append(out, op)
		}
	}
	return out
}

// principalJSON is p and its grants as the summary shows them to p itself.
func principalJSON(p *Principal) wire.SummaryPrincipal {
	out := wire.SummaryPrincipal{Name: p.Name, Open: p.all, Grants: []wire.Grant{}}
	for _, g := range p.allow {
		res := g.resource
		if g.prefix {
			res += "*"
		}
		ops := make([]string, 0, len(g.ops))
		for op := range g.ops {
			ops = append(ops, op)
		}
		slices.Sort(ops)
		out.Grants = append(out.Grants, wire.Grant{Resource: res, Ops: ops})
	}
	return out
}
