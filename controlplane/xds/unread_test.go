package xds

import "testing"

// A write skips the sender goroutine only while the client has shown it read all but less than
// directWriteLimit bytes: an answer to a response counts it and every response before it.
func TestUnreadCannotBlock(t *testing.T) {
	const k = 1 << 10
	type step struct {
		write  string // a response's nonce ...
		size   int    // ... and size; or
		answer string // a request carrying this nonce
		want   bool   // cannotBlock after the step
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"nothing written", []step{{answer: "", want: true}}},
		{"small unanswered writes", []step{{write: "1", size: 10 * k, want: true}, {write: "2", size: 10 * k, want: true}, {write: "3", size: 12 * k, want: false}}},
		{"a large first response", []step{{write: "1", size: 1 << 20, want: false}, {answer: "1", want: true}}},
		{"an answer covers the responses before it", []step{
			{write: "1", size: 20 * k, want: true}, {write: "2", size: 20 * k, want: false}, {write: "3", size: 1 * k, want: false},
			{answer: "2", want: true}, {write: "4", size: 30 * k, want: true}, {write: "5", size: 1 * k, want: false}, {answer: "5", want: true}}},
		{"an unknown or empty nonce teaches nothing", []step{
			{write: "1", size: 40 * k, want: false}, {answer: "zz", want: false}, {answer: "", want: false}, {answer: "1", want: true}, {answer: "1", want: true}}},
		{"an old answer after a newer one does not go back", []step{
			{write: "1", size: 20 * k, want: true}, {write: "2", size: 20 * k, want: false}, {answer: "2", want: true}, {answer: "1", want: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var u unread
			for i, s := range tc.steps {
				if s.write != "" {
					u.written(s.write, s.size)
				} else {
					u.answered(s.answer)
				}
				if got := u.cannotBlock(); got != s.want {
					t.Fatalf("step %d %+v: cannotBlock = %v, want %v (sent %d, read %d)", i, s, got, s.want, u.sent, u.read)
				}
			}
		})
	}
}

// A client that never answers is remembered for its last maxPending responses only; an answer
// to a forgotten one teaches nothing (its bytes stay unread), to a remembered one everything.
func TestUnreadForgetsOldest(t *testing.T) {
	var u unread
	for i := range maxPending + 10 {
		u.written(string(rune('a'+i%26))+string(rune('0'+i/26)), 1)
	}
	if len(u.pending) != maxPending {
		t.Fatalf("pending = %d, want %d", len(u.pending), maxPending)
	}
	u.answered("a0") // forgotten
	if u.read != 0 {
		t.Fatalf("an answer to a forgotten response moved read to %d", u.read)
	}
	last := u.pending[len(u.pending)-1].nonce
	u.answered(last)
	if u.read != u.sent || len(u.pending) != 0 {
		t.Fatalf("after answering the newest: read %d of %d, %d pending", u.read, u.sent, len(u.pending))
	}
}
