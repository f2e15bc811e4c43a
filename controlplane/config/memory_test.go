package config

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xdslab/xdslab/istioconfig"
	networking "istio.io/api/networking/v1alpha3"
)

func se(name, ns string, hosts ...string) *istioconfig.Config {
	return &istioconfig.Config{
		Meta: istioconfig.Meta{Kind: istioconfig.KindServiceEntry, Name: name, Namespace: ns},
		Spec: &networking.ServiceEntry{Hosts: hosts},
	}
}

func key(kind istioconfig.Kind, ns, name string) istioconfig.Key {
	return istioconfig.Key{Kind: kind, Namespace: ns, Name: name}
}

// drain starts Run and returns a function that reads the next n events (failing the test if
// they do not come).
func runStore(t *testing.T, m *Memory) func(n int) []Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return func(n int) []Event {
		t.Helper()
		var out []Event
		for range n {
			out = append(out, nextEvent(t, m.Events()))
		}
		return out
	}
}

func nextEvent(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("event channel closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return Event{}
}

// describe renders events as "add ServiceEntry/ns/name[hosts]" for compact assertions.
func describe(evs []Event) string {
	var parts []string
	for _, e := range evs {
		s := e.String()
		if e.New != nil {
			if sp, ok := e.New.Spec.(*networking.ServiceEntry); ok {
				s += fmt.Sprint(sp.Hosts)
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func TestMemoryWrites(t *testing.T) {
	type op struct {
		do      string // create, update, delete
		cfg     *istioconfig.Config
		key     istioconfig.Key
		wantErr string
	}
	a := key(istioconfig.KindServiceEntry, "default", "a")
	tests := []struct {
		name       string
		ops        []op
		wantEvents string
		wantList   []string // names in List(ServiceEntry, "")
	}{
		{
			name:       "create then update then delete",
			ops:        []op{{do: "create", cfg: se("a", "default", "a.com")}, {do: "update", cfg: se("a", "default", "b.com")}, {do: "delete", key: a}},
			wantEvents: "add ServiceEntry/default/a[a.com]; update ServiceEntry/default/a[b.com]; delete ServiceEntry/default/a",
		},
		{
			name:       "update upserts",
			ops:        []op{{do: "update", cfg: se("a", "default", "a.com")}},
			wantEvents: "add ServiceEntry/default/a[a.com]",
			wantList:   []string{"default/a"},
		},
		{
			name:       "equal update is a no-op",
			ops:        []op{{do: "create", cfg: se("a", "default", "a.com")}, {do: "update", cfg: se("a", "default", "a.com")}},
			wantEvents: "add ServiceEntry/default/a[a.com]",
			wantList:   []string{"default/a"},
		},
		{
			name:       "create twice fails",
			ops:        []op{{do: "create", cfg: se("a", "default")}, {do: "create", cfg: se("a", "default"), wantErr: "already exists"}},
			wantEvents: "add ServiceEntry/default/a[]",
			wantList:   []string{"default/a"},
		},
		{
			name: "delete missing fails",
			ops:  []op{{do: "delete", key: a, wantErr: "not found"}},
		},
		{
			name: "validation",
			ops: []op{
				{do: "create", cfg: se("", "default"), wantErr: "metadata.name is required"},
				{do: "create", cfg: se("a", ""), wantErr: "metadata.namespace is required"},
				{do: "create", cfg: se("A_b", "default"), wantErr: "not a valid name"},
				{do: "create", cfg: se("a", "ns.x"), wantErr: "not a valid namespace"},
				{do: "create", cfg: &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "a", Namespace: "d"}, Spec: &networking.ServiceEntry{}}, wantErr: "want istio.networking.v1alpha3.VirtualService"},
				{do: "update", cfg: &istioconfig.Config{Meta: istioconfig.Meta{Kind: "Pod", Name: "a", Namespace: "d"}, Spec: &networking.ServiceEntry{}}, wantErr: "unknown kind"},
				{do: "update", cfg: &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindGateway, Name: "a", Namespace: "d"}}, wantErr: "spec is nil"},
				{do: "update", cfg: &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindGateway, Name: "a", Namespace: "d"}, Spec: (*networking.Gateway)(nil)}, wantErr: "spec is nil"},
				{do: "update", cfg: nil, wantErr: "nil"},
			},
		},
		{
			name: "list sorted by namespace then name, one kind",
			ops: []op{
				{do: "create", cfg: se("b", "ns2")}, {do: "create", cfg: se("a", "ns2")}, {do: "create", cfg: se("z", "ns1")},
				{do: "create", cfg: &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindGateway, Name: "g", Namespace: "ns1"}, Spec: &networking.Gateway{}}},
			},
			wantEvents: "add ServiceEntry/ns2/b[]; add ServiceEntry/ns2/a[]; add ServiceEntry/ns1/z[]; add Gateway/ns1/g",
			wantList:   []string{"ns1/z", "ns2/a", "ns2/b"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemory(MemoryOptions{})
			for i, o := range tc.ops {
				var err error
				switch o.do {
				case "create":
					_, err = m.Create(o.cfg)
				case "update":
					_, err = m.Update(o.cfg)
				case "delete":
					err = m.Delete(o.key)
				}
				if o.wantErr == "" && err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				if o.wantErr != "" && (err == nil || !strings.Contains(err.Error(), o.wantErr)) {
					t.Fatalf("op %d: err = %v, want containing %q", i, err, o.wantErr)
				}
			}
			n := m.Pending()
			if want := len(strings.Split(tc.wantEvents, "; ")); tc.wantEvents != "" && n != want {
				t.Fatalf("pending = %d, want %d", n, want)
			} else if tc.wantEvents == "" && n != 0 {
				t.Fatalf("pending = %d, want 0", n)
			}
			if got := describe(runStore(t, m)(n)); got != tc.wantEvents {
				t.Errorf("events:\n got %s\nwant %s", got, tc.wantEvents)
			}
			var names []string
			for _, c := range m.List(istioconfig.KindServiceEntry, "") {
				names = append(names, c.Namespace+"/"+c.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.wantList, ",") {
				t.Errorf("List = %v, want %v", names, tc.wantList)
			}
		})
	}
}

func TestMemoryMetadata(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := NewMemory(MemoryOptions{Now: func() time.Time { return clock }})
	in := se("a", "default", "a.com")
	c1, err := m.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if c1 == in || in.ResourceVersion != "" {
		t.Fatal("the caller's config was modified or kept as is")
	}
	if c1.Spec != in.Spec {
		t.Error("spec was copied: the store must share it")
	}
	if c1.ResourceVersion != "1" || !c1.CreationTimestamp.Equal(clock) {
		t.Errorf("rv=%q created=%v", c1.ResourceVersion, c1.CreationTimestamp)
	}
	clock = clock.Add(time.Hour)
	c2, _ := m.Update(se("a", "default", "b.com"))
	if c2.ResourceVersion != "2" || !c2.CreationTimestamp.Equal(c1.CreationTimestamp) {
		t.Errorf("update: rv=%q created=%v (want 2, %v)", c2.ResourceVersion, c2.CreationTimestamp, c1.CreationTimestamp)
	}
	if got, _ := m.Get(c1.Key()); got != c2 {
		t.Error("Get does not return the stored pointer")
	}
	if got := m.List(istioconfig.KindServiceEntry, "other"); len(got) != 0 {
		t.Errorf("List(other) = %v", got)
	}
	if err := m.Delete(c1.Key()); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(c1.Key()); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	evs := runStore(t, m)(3)
	if evs[1].Old != c1 || evs[1].New != c2 || evs[2].Old != c2 || evs[2].New != nil {
		t.Errorf("events do not carry the stored values: %+v", evs)
	}
}

func TestMemoryCoalescing(t *testing.T) {
	k := func(n string) *istioconfig.Config { return se(n, "default", n+".com") }
	upd := func(n, h string) *istioconfig.Config { return se(n, "default", h) }
	tests := []struct {
		name  string
		above int
		write func(m *Memory)
		want  string
	}{
		{
			name: "below the threshold every write is an event", above: 100,
			write: func(m *Memory) { m.Update(k("a")); m.Update(upd("a", "x")); m.Delete(k("a").Key()) },
			want:  "add ServiceEntry/default/a[a.com]; update ServiceEntry/default/a[x]; delete ServiceEntry/default/a",
		},
		{
			name: "add+update → add", above: -1,
			write: func(m *Memory) { m.Update(k("a")); m.Update(upd("a", "x")) },
			want:  "add ServiceEntry/default/a[x]",
		},
		{
			name: "add+delete → nothing, other keys keep their order", above: -1,
			write: func(m *Memory) { m.Update(k("a")); m.Update(k("b")); m.Delete(k("a").Key()); m.Update(k("c")) },
			want:  "add ServiceEntry/default/b[b.com]; add ServiceEntry/default/c[c.com]",
		},
		{
			name: "add+update+delete → nothing", above: -1,
			write: func(m *Memory) { m.Update(k("b")); m.Update(upd("b", "y")); m.Delete(k("b").Key()) },
			want:  "",
		},
		{
			name: "coalescing starts at the threshold", above: 2,
			write: func(m *Memory) {
				m.Update(k("a"))
				m.Update(k("b"))
				m.Update(upd("a", "1")) // backlog is 2: merged into add a
				m.Update(k("c"))        // new key: queued
				m.Update(upd("b", "2")) // merged into add b
			},
			want: "add ServiceEntry/default/a[1]; add ServiceEntry/default/b[2]; add ServiceEntry/default/c[c.com]",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemory(MemoryOptions{CoalesceAbove: tc.above})
			tc.write(m)
			n := m.Pending()
			if got := describe(runStore(t, m)(n)); got != tc.want {
				t.Errorf("events:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestCoalesce checks every merge of two successive undelivered events of one key.
func TestCoalesce(t *testing.T) {
	v1, v2, v3 := se("a", "d", "1"), se("a", "d", "2"), se("a", "d", "3")
	tests := []struct {
		name     string
		a, b     Event
		want     Event
		wantKeep bool
	}{
		{"add+update", Event{EventAdd, nil, v1, nil}, Event{EventUpdate, v1, v2, nil}, Event{EventAdd, nil, v2, nil}, true},
		{"add+delete", Event{EventAdd, nil, v1, nil}, Event{EventDelete, v1, nil, nil}, Event{}, false},
		{"update+update", Event{EventUpdate, v1, v2, nil}, Event{EventUpdate, v2, v3, nil}, Event{EventUpdate, v1, v3, nil}, true},
		{"update+delete", Event{EventUpdate, v1, v2, nil}, Event{EventDelete, v2, nil, nil}, Event{EventDelete, v1, nil, nil}, true},
		{"delete+add", Event{EventDelete, v1, nil, nil}, Event{EventAdd, nil, v2, nil}, Event{EventUpdate, v1, v2, nil}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, keep := coalesce(tc.a, tc.b)
			if keep != tc.wantKeep || (keep && got != tc.want) {
				t.Errorf("coalesce = %v %v, want %v %v", got, keep, tc.want, tc.wantKeep)
			}
		})
	}
}

func TestMemoryApplyAtomic(t *testing.T) {
	m := NewMemory(MemoryOptions{})
	if err := m.Apply([]*istioconfig.Config{se("a", "default"), se("", "default")}, nil); err == nil {
		t.Fatal("a batch with an invalid object was accepted")
	}
	if m.Len() != 0 {
		t.Fatal("an invalid batch was partly applied")
	}
	m.Update(se("a", "default"))
	if err := m.Apply([]*istioconfig.Config{se("b", "default")}, []istioconfig.Key{se("a", "default").Key(), se("zz", "default").Key()}); err != nil {
		t.Fatal(err)
	}
	if got := describe(runStore(t, m)(3)); got != "add ServiceEntry/default/a[]; delete ServiceEntry/default/a; add ServiceEntry/default/b[]" {
		t.Error(got)
	}
}

func TestMemoryRunClosesEvents(t *testing.T) {
	m := NewMemory(MemoryOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := <-m.Events(); ok {
		t.Error("events channel open after Run returned")
	}
	if err := m.Run(context.Background()); err == nil {
		t.Error("second Run accepted")
	}
}

// TestMemoryConcurrentConsumerView has writers race a slow consumer (with coalescing on) and
// checks that the consumer's view built from events alone matches the store: every event's
// Old is exactly the value the consumer holds, so no event was lost or reordered per key.
func TestMemoryConcurrentConsumerView(t *testing.T) {
	for _, above := range []int{-1, 8, 1 << 20} {
		t.Run(fmt.Sprint("coalesceAbove=", above), func(t *testing.T) {
			m := NewMemory(MemoryOptions{CoalesceAbove: above})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			runDone := make(chan struct{})
			go func() { defer close(runDone); _ = m.Run(ctx) }()
			defer func() { cancel(); <-runDone }()

			const writers, writes, keys = 4, 300, 10
			writersDone := make(chan struct{})
			go func() {
				defer close(writersDone)
				done := make(chan struct{}, writers)
				for w := range writers {
					go func() {
						defer func() { done <- struct{}{} }()
						for i := range writes {
							name := fmt.Sprintf("k%d", (w*7+i)%keys)
							if i%5 == 4 {
								_ = m.Delete(key(istioconfig.KindServiceEntry, "default", name))
							} else {
								_, _ = m.Update(se(name, "default", fmt.Sprint(w, "-", i)))
							}
						}
					}()
				}
				for range writers {
					<-done
				}
				_, _ = m.Update(se("sentinel", "default"))
			}()
			view := map[istioconfig.Key]*istioconfig.Config{}
			for {
				ev := nextEvent(t, m.Events())
				k := ev.Key()
				if view[k] != ev.Old {
					t.Fatalf("%v: Old is not the consumer's current value", ev)
				}
				if ev.New == nil {
					delete(view, k)
				} else {
					view[k] = ev.New
				}
				if k.Name == "sentinel" {
					break
				}
			}
			<-writersDone
			all := m.List(istioconfig.KindServiceEntry, "")
			if len(all) != len(view) {
				t.Fatalf("store has %d objects, consumer view %d", len(all), len(view))
			}
			for _, c := range all {
				if view[c.Key()] != c {
					t.Errorf("%s: consumer view differs from the store", c.Key())
				}
			}
		})
	}
}

// BenchmarkMemoryUpdate measures an upsert that changes the spec, with its event delivered to
// a consumer.
func BenchmarkMemoryUpdate(b *testing.B) {
	m := NewMemory(MemoryOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	consumed := make(chan int)
	go func() {
		n := 0
		for range m.Events() {
			n++
		}
		consumed <- n
	}()
	cfgs := make([]*istioconfig.Config, 1000)
	for i := range cfgs {
		cfgs[i] = se(fmt.Sprintf("svc-%d", i), "default", fmt.Sprint(i))
	}
	i := 0
	for b.Loop() {
		c := *cfgs[i%len(cfgs)]
		c.Spec = &networking.ServiceEntry{Hosts: []string{fmt.Sprint(i)}}
		if _, err := m.Update(&c); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	cancel()
	<-done
	<-consumed
}

func TestMemoryAll(t *testing.T) {
	m := NewMemory(MemoryOptions{})
	m.Update(&istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindGateway, Name: "g", Namespace: "a"}, Spec: &networking.Gateway{}})
	m.Update(se("b", "z"))
	m.Update(se("a", "z"))
	var got []string
	for _, c := range m.All() {
		got = append(got, c.Key().String())
	}
	if want := "ServiceEntry/z/a ServiceEntry/z/b Gateway/a/g"; strings.Join(got, " ") != want {
		t.Errorf("All = %v, want %s", got, want)
	}
}

// Each event carries the store's objects as of its delivery (its change included), and a
// version handed out never changes: later writes copy what they touch.
func TestMemoryEventState(t *testing.T) {
	m := NewMemory(MemoryOptions{})
	next := runStore(t, m)
	a, b := se("a", "ns", "a.example.com"), se("b", "ns", "b.example.com")
	if _, err := m.Create(a); err != nil {
		t.Fatal(err)
	}
	first := next(1)[0]
	if first.State == nil || first.State.Config(a.Key()) == nil || len(first.State.Configs()) != 1 {
		t.Fatalf("first event's state = %v, want a alone", first.State.Configs())
	}
	if err := m.Apply([]*istioconfig.Config{b, se("a", "ns", "a2.example.com")}, nil); err != nil {
		t.Fatal(err)
	}
	evs := next(2)
	last := evs[1].State
	if got := len(last.Configs()); got != 2 || last.Config(b.Key()) == nil {
		t.Fatalf("last state holds %d objects, want a and b", got)
	}
	if got := last.Config(a.Key()).Spec.(*networking.ServiceEntry).Hosts[0]; got != "a2.example.com" {
		t.Errorf("last state's a has host %s, want the update's", got)
	}
	if len(first.State.Configs()) != 1 || first.State.Config(a.Key()).Spec.(*networking.ServiceEntry).Hosts[0] != "a.example.com" {
		t.Error("the first event's state changed after later writes")
	}
	if err := m.Delete(a.Key()); err != nil {
		t.Fatal(err)
	}
	if del := next(1)[0]; del.State.Config(a.Key()) != nil || last.Config(a.Key()) == nil {
		t.Error("a delete's state still holds the object, or an earlier state lost it")
	}
}
