package main

import (
	"bytes"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

func TestWriteVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/xdslab/xdslab", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "google.golang.org/grpc", Version: "v1.85.0"},
			{Path: "github.com/envoyproxy/go-control-plane/envoy", Version: "v1.40.0"},
			{Path: "istio.io/api", Version: "v1.32.0"},
			{Path: "golang.org/x/text", Version: "v0.1.0"},
		},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "cc22f67aabbccddeeff00112233445566778899"}, {Key: "vcs.time", Value: "2026-12-04T13:00:00Z"},
			{Key: "vcs.modified", Value: "true"}, {Key: "-tags", Value: "vtprotobuf"}}}
	var b bytes.Buffer
	writeVersion(&b, bi)
	want := `xdslab (devel)
  commit   cc22f67aabbccddeeff00112233445566778899 (2026-12-04T13:00:00Z), with uncommitted changes
  go       go1.26.0
  tags     vtprotobuf
  github.com/envoyproxy/go-control-plane/envoy v1.40.0
  google.golang.org/grpc v1.85.0
  istio.io/api v1.32.0
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if got := shortVersion(bi); got != "cc22f67aabbc+dirty" {
		t.Errorf("shortVersion = %q", got)
	}
	bi.Main.Version = "v0.3.0"
	if got := shortVersion(bi); got != "v0.3.0" {
		t.Errorf("shortVersion of a released module = %q", got)
	}
}

// TestVersionCommand runs 'xdslab version' on this test binary's own build information.
func TestVersionCommand(t *testing.T) {
	out := captureStdout(t, func() {
		if code := runCLI(t.Context(), []string{"version"}); code != exitOK {
			t.Fatalf("exit %d", code)
		}
	})
	for _, want := range []string{"xdslab ", "  go       go1.", "google.golang.org/grpc v"} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
}

// captureStdout returns what f writes to os.Stdout.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { os.Stdout = old }()
	f()
	w.Close()
	return <-done
}
