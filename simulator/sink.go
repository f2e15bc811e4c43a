package simulator

import (
	"context"

	"github.com/xdslab/xdslab/istioconfig"
)

// Sink receives the mesh: the initial objects once, then every event in timeline order. One
// goroutine (the Runner's) calls it. The objects are immutable: a sink may keep them.
//
// A sink needs nothing beyond istioconfig.Config and istioconfig.Key. The implementations live
// in simulator/sinks (the in-process sink that feeds our control plane's config store among
// them); the simulator never imports them.
type Sink interface {
	// Init writes the initial topology.
	Init(ctx context.Context, initial []istioconfig.Config) error
	// Apply makes the event's upserts and deletes visible to the control plane. When it
	// returns, the change is in the source (t0 is taken right after).
	Apply(ctx context.Context, ev Event) error
	// Close flushes and releases the sink.
	Close() error
}

// SinkFuncs adapts functions to a Sink; nil functions do nothing.
type SinkFuncs struct {
	InitFunc  func(ctx context.Context, initial []istioconfig.Config) error
	ApplyFunc func(ctx context.Context, ev Event) error
	CloseFunc func() error
}

var _ Sink = SinkFuncs{}

// Init calls InitFunc.
func (f SinkFuncs) Init(ctx context.Context, initial []istioconfig.Config) error {
	if f.InitFunc == nil {
		return nil
	}
	return f.InitFunc(ctx, initial)
}

// Apply calls ApplyFunc.
func (f SinkFuncs) Apply(ctx context.Context, ev Event) error {
	if f.ApplyFunc == nil {
		return nil
	}
	return f.ApplyFunc(ctx, ev)
}

// Close calls CloseFunc.
func (f SinkFuncs) Close() error {
	if f.CloseFunc == nil {
		return nil
	}
	return f.CloseFunc()
}
