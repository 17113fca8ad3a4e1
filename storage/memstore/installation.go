package memstore

import (
	"context"
	"slices"
	"sort"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging/driver"
)

var (
	_ driver.Installation = (*store)(nil)
	_ driver.KeyLister    = (*store)(nil)
)

// InstallationID returns the Store's id, made when it was created.
func (s *store) InstallationID(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.installation == "" {
		s.installation = ids.New("ins_")
	}
	return s.installation, nil
}

// Epoch returns the reconcile epoch: 0 at first, then that of the last
// AdvanceEpoch.
func (s *store) Epoch(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch, nil
}

// AdvanceEpoch adds one to the reconcile epoch and returns it.
func (s *store) AdvanceEpoch(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
	return s.epoch, nil
}

// AttachmentKeys returns up to limit keys of attachment rows after after,
// in ascending order.
func (s *store) AttachmentKeys(ctx context.Context, after string, limit int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	keys := make([]string, 0, len(s.atts))
	for _, a := range s.atts {
		if a.Key > after {
			keys = append(keys, a.Key)
		}
	}
	s.mu.Unlock()
	sort.Strings(keys)
	return slices.Clip(keys[:min(max(limit, 0), len(keys))]), nil
}
