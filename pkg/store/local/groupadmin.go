package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.GroupAdminStore = (*MetaStore)(nil)

// PutGroupConfig stores the group's settings, creating the group when absent.
func (m *MetaStore) PutGroupConfig(ctx context.Context, cfg store.GroupConfig) (store.GroupConfig, error) {
	if cfg.Name == "" {
		return store.GroupConfig{}, errors.New("local: put group config: empty name")
	}
	var out store.GroupConfig
	err := m.update(ctx, func(tx *bolt.Tx) error {
		key := []byte(cfg.Name)
		old, ok, err := getRec[groupRec](tx, bucketGroups, key)
		if err != nil {
			return err
		}
		rec := groupToRec(cfg)
		if ok {
			rec.CreatedAt = old.CreatedAt
		}
		if err := putRec(tx, bucketGroups, key, rec); err != nil {
			return err
		}
		out = rec.toStore()
		return nil
	})
	return out, err
}

// ListGroups returns every group name in lexical order (bbolt's key order).
func (m *MetaStore) ListGroups(ctx context.Context) ([]string, error) {
	return m.keys(ctx, bucketGroups)
}

// DeleteCommits deletes the group's commit rows on topic and fences its assignment
// rows there, in one transaction, unless a lease is live.
func (m *MetaStore) DeleteCommits(ctx context.Context, group, topic string, now time.Time) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		prefix := appendString(appendString(nil, group), topic)
		var fenced []assignmentRec
		c := tx.Bucket([]byte(bucketAssignments)).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var rec assignmentRec
			if err := decodeRec(bucketAssignments, k, v, &rec); err != nil {
				return err
			}
			if a := rec.toStore(); a.Live(now) {
				return fmt.Errorf("local: delete commits of %s on %s: partition %d leased by %q until %s: %w",
					group, topic, a.Partition, a.Owner, a.ExpiresAt.UTC().Format(time.RFC3339), store.ErrGroupActive)
			}
			fenced = append(fenced, rec)
		}
		for _, rec := range fenced {
			rec.Owner = ""
			rec.Generation++
			if err := putRec(tx, bucketAssignments, groupTopicPartitionKey(group, topic, rec.Partition), rec); err != nil {
				return err
			}
		}
		var keys [][]byte
		cc := tx.Bucket([]byte(bucketCommits)).Cursor()
		for k, _ := cc.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cc.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		for _, k := range keys {
			if err := tx.Bucket([]byte(bucketCommits)).Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteGroup removes the group's settings, commits, members and parked keys and fences
// its assignment rows, in one transaction, unless a lease or a member is live.
func (m *MetaStore) DeleteGroup(ctx context.Context, group string, now time.Time) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		if _, ok, err := getRec[groupRec](tx, bucketGroups, []byte(group)); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("local: group %q: %w", group, store.ErrNotFound)
		}
		prefix := appendString(nil, group)
		var fenced []assignmentRec
		if err := scanPrefix(tx, bucketAssignments, prefix, func(rec assignmentRec) { fenced = append(fenced, rec) }); err != nil {
			return err
		}
		for _, rec := range fenced {
			if a := rec.toStore(); a.Live(now) {
				return fmt.Errorf("local: delete group %s: %s/%d leased by %q until %s: %w",
					group, a.Topic, a.Partition, a.Owner, a.ExpiresAt.UTC().Format(time.RFC3339), store.ErrGroupActive)
			}
		}
		var members []memberRec
		if err := scanPrefix(tx, bucketMembers, prefix, func(rec memberRec) { members = append(members, rec) }); err != nil {
			return err
		}
		for _, rec := range members {
			if mem := rec.toStore(); mem.ExpiresAt.After(now) {
				return fmt.Errorf("local: delete group %s: member %q is live until %s: %w",
					group, mem.ID, mem.ExpiresAt.UTC().Format(time.RFC3339), store.ErrGroupActive)
			}
		}
		for _, rec := range fenced {
			a := rec.toStore()
			rec.Owner = ""
			rec.Generation++
			rec.GroupDeleted = true
			if err := putRec(tx, bucketAssignments, groupTopicPartitionKey(group, a.Topic, a.Partition), rec); err != nil {
				return err
			}
		}
		for _, bucket := range []string{bucketCommits, bucketMembers, bucketParked} {
			b := tx.Bucket([]byte(bucket))
			var keys [][]byte
			c := b.Cursor()
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				keys = append(keys, bytes.Clone(k))
			}
			for _, k := range keys {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
		}
		if err := tx.Bucket([]byte(bucketBarriers)).Delete([]byte(group)); err != nil {
			return err
		}
		return tx.Bucket([]byte(bucketGroups)).Delete([]byte(group))
	})
}
