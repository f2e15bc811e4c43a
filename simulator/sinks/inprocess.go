package sinks

import (
	"context"
	"errors"
	"fmt"

	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
)

// ConfigApplier is the part of a config store the in-process sink writes to: it applies a batch
// of upserts and deletes atomically (readers see all of them or none). controlplane/config's
// Memory store implements it; the runner reaches it through controlplane.Server.ConfigStore().
type ConfigApplier interface {
	Apply(upserts []*istioconfig.Config, deletes []istioconfig.Key) error
}

// InProcess feeds a control plane running in the same process: every event's upserts and
// deletes go into its config store in one Apply, so when Apply returns the change is in the
// source the control plane reads — exactly the moment t0 stands for. It needs no files and no
// watcher, so the measured latency holds no file-system delay.
type InProcess struct {
	store  ConfigApplier
	closed bool
}

var _ simulator.Sink = (*InProcess)(nil)

// NewInProcess returns a sink writing into store.
func NewInProcess(store ConfigApplier) (*InProcess, error) {
	if store == nil {
		return nil, errors.New("in-process sink: no config store given")
	}
	return &InProcess{store: store}, nil
}

// Init applies the initial topology as one batch.
func (s *InProcess) Init(_ context.Context, initial []istioconfig.Config) error {
	if s.closed {
		return errors.New("in-process sink: closed")
	}
	if err := s.store.Apply(pointers(initial), nil); err != nil {
		return fmt.Errorf("in-process sink: initial topology: %w", err)
	}
	return nil
}

// Apply applies the event's upserts and deletes as one batch.
func (s *InProcess) Apply(_ context.Context, ev simulator.Event) error {
	if s.closed {
		return errors.New("in-process sink: closed")
	}
	if err := s.store.Apply(pointers(ev.Upserts), ev.Deletes); err != nil {
		return fmt.Errorf("in-process sink: event %d (%s): %w", ev.ID, ev.Kind, err)
	}
	return nil
}

// Close marks the sink closed; the store belongs to the control plane and stays open.
func (s *InProcess) Close() error {
	s.closed = true
	return nil
}

// pointers returns pointers to copies of cfgs (Configs are immutable once stored; the store
// keeps its own shallow copy anyway).
func pointers(cfgs []istioconfig.Config) []*istioconfig.Config {
	out := make([]*istioconfig.Config, len(cfgs))
	for i := range cfgs {
		c := cfgs[i]
		out[i] = &c
	}
	return out
}
