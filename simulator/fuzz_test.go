package simulator_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/internal/simtest"
)

// FuzzParseTrace: any input gives events or an error naming the line, never a panic; what parses
// re-encodes to a trace that parses to the same events.
func FuzzParseTrace(f *testing.F) {
	cfg := simtest.MixedConfig(2)
	cfg.Duration = 3 * time.Second
	sim, err := simulator.New(cfg)
	require.NoError(f, err)
	var all bytes.Buffer
	for i, ev := range simtest.Drain(f, sim) {
		if ev.Skip != "" || i > 8 {
			continue
		}
		line, err := simulator.EncodeEvent(ev)
		require.NoError(f, err)
		f.Add(line)
		all.Write(line)
		all.WriteByte('\n')
	}
	f.Add(all.Bytes())
	f.Add([]byte(""))
	f.Add([]byte("\n\n{}\n"))
	f.Add([]byte(`{"id":1,"kind":"scale","scheduled":"-1s","t0":"2026-01-01T00:00:00Z","expectation":{"id":1,"kind":"scale","scheduled":"2026-01-01T00:00:00Z","t0":"2026-01-01T00:00:00Z","all":[{"op":"cluster-absent","resource":"x"}]}}`))
	f.Add([]byte(`{"id":1,"kind":"scale","scheduled":"1s","upserts":[{"kind":"ServiceEntry","name":"a","namespace":"b","spec":{"hosts":["a"],"bogus":1}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := simulator.ParseTrace(bytes.NewReader(data), "fuzz.jsonl")
		if err != nil {
			require.Contains(t, err.Error(), "fuzz.jsonl:")
			return
		}
		var again bytes.Buffer
		for _, te := range evs {
			line, err := simulator.EncodeEvent(simulator.Event{ID: te.ID, Kind: te.Kind, Phase: te.Phase, Scheduled: te.Scheduled, T0: te.T0,
				Upserts: te.Upserts, Deletes: te.Deletes, Expectation: te.Expectation})
			require.NoError(t, err)
			again.Write(line)
			again.WriteByte('\n')
		}
		evs2, err := simulator.ParseTrace(&again, "again")
		require.NoError(t, err)
		require.Len(t, evs2, len(evs))
		for i := range evs {
			require.Equal(t, evs[i].Scheduled, evs2[i].Scheduled)
			require.Equal(t, evs[i].Expectation.All, evs2[i].Expectation.All)
			require.Equal(t, evs[i].Deletes, evs2[i].Deletes)
			require.Len(t, evs2[i].Upserts, len(evs[i].Upserts))
		}
	})
}

func TestParseTraceErrors(t *testing.T) {
	good := `{"id":1,"kind":"scale","scheduled":"1s","t0":"2026-01-01T00:00:00Z","expectation":{"id":1,"kind":"scale","scheduled":"2026-01-01T00:00:00Z","t0":"2026-01-01T00:00:00Z","all":[{"op":"cluster-absent","resource":"x"}]}}`
	cases := []struct{ name, in, want string }{
		{"not json", "hello", "t.jsonl:1: not a trace record"},
		{"unknown field", `{"id":1,"bogus":2}`, `t.jsonl:1: not a trace record`},
		{"bad kind", `{"id":1,"kind":"flap","scheduled":"1s"}`, `t.jsonl:1: kind "flap"`},
		{"bad scheduled", `{"id":1,"kind":"scale","scheduled":"soon"}`, `t.jsonl:1: scheduled "soon"`},
		{"second line", good + "\n\n" + `{"id":2,"kind":"scale","scheduled":"1s"}`, "t.jsonl:3: expectation: probe: event 0"},
		{"two values", good + good, "t.jsonl:1: more than one JSON value"},
		{"bad spec", `{"id":1,"kind":"scale","scheduled":"1s","upserts":[{"kind":"ServiceEntry","name":"a","namespace":"b","spec":{"bogus":1}}]}`, `upserts[0] (ServiceEntry b/a): spec:`},
		{"bad upsert kind", `{"id":1,"kind":"scale","scheduled":"1s","upserts":[{"kind":"Pod","name":"a","namespace":"b","spec":{}}]}`, `unknown kind "Pod"`},
		{"delete without name", `{"id":1,"kind":"scale","scheduled":"1s","deletes":[{"kind":"ServiceEntry","namespace":"b"}]}`, `deletes[0]: name and namespace are required`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := simulator.ParseTrace(bytes.NewReader([]byte(tc.in)), "t.jsonl")
			require.ErrorContains(t, err, tc.want)
		})
	}
	evs, err := simulator.ParseTrace(bytes.NewReader([]byte(good+"\n")), "t.jsonl")
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, simulator.Scale, evs[0].Kind)
	require.Equal(t, time.Second, evs[0].Scheduled)
}
