package sinks

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
)

// EventLog writes the event stream as JSON lines (the trace format ParseTrace reads and the
// replay churn kind re-emits). Use it as a Runner recorder, so that each line carries t0.
type EventLog struct {
	w *bufio.Writer
	// Events counts the lines written.
	Events int
}

// NewEventLog writes to w; the caller closes w after Close.
func NewEventLog(w io.Writer) *EventLog { return &EventLog{w: bufio.NewWriterSize(w, 1<<16)} }

// Init writes nothing: the log holds events only.
func (l *EventLog) Init(context.Context, []istioconfig.Config) error { return nil }

// Apply appends one line.
func (l *EventLog) Apply(_ context.Context, ev simulator.Event) error {
	line, err := simulator.EncodeEvent(ev)
	if err != nil {
		return fmt.Errorf("event log: %w", err)
	}
	line = append(line, '\n')
	if _, err := l.w.Write(line); err != nil {
		return fmt.Errorf("event log: %w", err)
	}
	l.Events++
	// Flush per event so that a live run's log can be tailed and survives a kill.
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("event log: %w", err)
	}
	return nil
}

// Close flushes buffered lines.
func (l *EventLog) Close() error { return l.w.Flush() }
