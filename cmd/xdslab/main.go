// Command xdslab is the CLI of the xDS control plane and its lab. Flags and environment are read
// only in this package and turned into config structs for the packages below.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes (DESIGN.md): 0 ok, 1 regression found by compare, 2 bad usage or input,
// 99 a threshold failed, 130 interrupted (SIGINT or SIGTERM; the shell's 128+SIGINT).
const (
	exitOK          = 0
	exitRegression  = 1
	exitUsage       = 2
	exitThreshold   = 99
	exitInterrupted = 130
)

// exitError carries an exit code up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr marks err as bad usage or input (exit 2).
func usageErr(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitUsage, err: err}
}

// withCode marks err with an explicit exit code.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, stop := interruptible(context.Background(), sigs, os.Stderr, stopNote(os.Args[1:]), func() { os.Exit(exitInterrupted) })
	code := runCLI(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// interruptible returns a context canceled by the first signal on sigs: a command stops what it
// does and writes what it has (xdslab run writes the results measured so far and exits 130).
// A second signal calls exit at once, with nothing more written. note says what stopping does
// (stopNote). stop releases the watcher.
func interruptible(parent context.Context, sigs <-chan os.Signal, stderr io.Writer, note string, exit func()) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "\nxdslab: %s: %s; press Ctrl-C again to exit at once\n", sig, note)
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "xdslab: %s again: exiting at once, nothing more written (exit %d)\n", sig, exitInterrupted)
			exit()
		case <-done:
		}
	}()
	return ctx, func() { close(done); cancel() }
}

// stopNote says what the command args name does on its first signal: the control plane drains
// its streams, every other command writes what it measured or wrote so far.
func stopNote(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if a == "controlplane" {
			return "stopping: draining xDS streams (--drain-timeout)"
		}
		break
	}
	return "stopping and writing what was measured"
}

// runCLI executes the CLI with args and returns the process exit code.
func runCLI(ctx context.Context, args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != exitRegression && ee.code != exitThreshold {
			fmt.Fprintln(os.Stderr, "xdslab:", ee.err)
		} else if ee.err != nil {
			fmt.Fprintln(os.Stderr, ee.err)
		}
		return ee.code
	}
	// cobra's own flag and argument errors are usage errors.
	fmt.Fprintln(os.Stderr, "xdslab:", err)
	return exitUsage
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "xdslab",
		Short: "A Pilot-style xDS control plane and the lab that measures it",
		Long: `xdslab runs scenario files against an xDS control plane (its own, in-process, or any ADS
server such as istiod or a go-control-plane server) with thousands of fake Envoy clients, and
measures push latency, debounce effectiveness and cache hit rates.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(subcommands()...)
	return root
}
