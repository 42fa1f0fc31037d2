package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/version"
)

// maxTransferStderr caps the remote stderr a transfer keeps for its
// error: the host writes it, and this side only shows a line of it.
const maxTransferStderr = 16 << 10

// maxTrailing caps what a transfer reads of the remote's stdout after the
// exchange is over, before it closes the pipe.
const maxTrailing = 1 << 20

// Command runs inv on h with stdio passed through and returns the remote
// corral's exit code, without the version check: the caller made it (Run
// makes it first).
func (r Runner) Command(ctx context.Context, h Host, inv Invocation, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	inv.Batch = inv.Batch || r.Batch
	return r.exec(ctx, SSHArgv(h, inv), stdin, stdout, stderr)
}

// RemoteError is a transfer the remote corral refused or failed: its own
// error message and hints, cut and made safe to print.
type RemoteError struct {
	Host    string
	Command string // "project receive web-3f2a1c"
	Code    int
	Message string
	Hints   []string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("host %s: corral %s failed: %s", e.Host, e.Command, e.Message)
}

// Hint is the remote corral's first hint, if it gave one.
func (e *RemoteError) Hint() string {
	if len(e.Hints) > 0 {
		return e.Hints[0]
	}
	return ""
}

// localError marks an error of this side in a transfer (LocalFailure).
type localError struct{ error }

func (e localError) Unwrap() error { return e.error }

// LocalFailure marks err, returned by a transfer's talk, as this side's
// own failure (a bundle it could not write): it is reported as it is,
// not the remote corral's complaint about the stream that was cut short.
func LocalFailure(err error) error {
	if err == nil {
		return nil
	}
	return localError{err}
}

// Transfer runs `corral ARGS` on h with no terminal and hands its stdin
// and stdout to talk, which writes to and reads from the remote corral
// (a branch stream, docs/REMOTE.md), and may close in to end the remote's
// input; the remote stderr is kept, capped, for the error. The version
// check is the caller's (CheckVersion). When talk returns, in is closed
// and at most maxTrailing more bytes of the remote's stdout are read; on
// an error of talk the ssh process is ended. The error, in order: ssh's own failure (ErrUnreachable), corral
// missing there, talk's own LocalFailure, the remote corral's failure
// (RemoteError, its message and hints), talk's error.
func (r Runner) Transfer(ctx context.Context, h Host, args []string, talk func(in io.WriteCloser, out io.Reader) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// OS pipes, handed to ssh as its own descriptors: no copying goroutine
	// that Wait would wait for while talk still holds the other end.
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	var errOut capped
	errOut.max = maxTransferStderr
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := r.exec(ctx, SSHArgv(h, Invocation{Args: args}), inR, outW, &errOut)
		// This side's copies of ssh's ends: once closed, talk's reads end
		// at ssh's exit and its writes fail instead of blocking.
		_ = inR.Close()
		_ = outW.Close()
		done <- result{code, err}
	}()
	talkErr := talk(inW, outR)
	_ = inW.Close()
	if talkErr != nil {
		cancel()
	} else {
		_, _ = io.Copy(io.Discard, io.LimitReader(outR, maxTrailing))
	}
	_ = outR.Close()
	res := <-done
	cmd := strings.Join(args, " ")
	var local localError
	switch {
	case res.err != nil:
		return fmt.Errorf("host %s: corral %s: %w", h.Name, cmd, res.err)
	case res.code == 255:
		return hint.New(fmt.Errorf("host %s (%s): %w: %s", h.Name, h.URL, ErrUnreachable, firstLine(errOut.String())), "try: ssh "+h.Target.Destination())
	case res.code == 127:
		return hint.New(fmt.Errorf("host %s: corral is not installed there (%s)", h.Name, firstLine(errOut.String())),
			fmt.Sprintf("install corral %s on %s", version.Version, h.Name))
	case errors.As(talkErr, &local):
		return local.error
	case res.code != 0:
		return remoteError(h.Name, cmd, res.code, errOut.String(), talkErr)
	}
	return talkErr
}

// remoteError reads the remote corral's stderr as its printError wrote
// it: "corral: MESSAGE" (more lines may follow), then "hint: ..." lines.
// Without such a line, the last line is the message; without any, talk's
// error or the exit code.
func remoteError(host, cmd string, code int, stderr string, talkErr error) error {
	e := &RemoteError{Host: host, Command: cmd, Code: code}
	var msg []string
	in := false
	for _, l := range strings.Split(stderr, "\n") {
		switch {
		case strings.HasPrefix(l, "corral: "):
			msg, in = []string{strings.TrimPrefix(l, "corral: ")}, true
		case strings.HasPrefix(l, "hint: "):
			e.Hints = append(e.Hints, display.Text(strings.TrimPrefix(l, "hint: "), 300))
			in = false
		case in && l != "" && len(msg) < 20:
			msg = append(msg, l)
		}
	}
	switch {
	case len(msg) > 0:
		e.Message = strings.Join(msg, "\n")
	case strings.TrimSpace(stderr) != "":
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		e.Message = lines[len(lines)-1]
	case talkErr != nil:
		e.Message = talkErr.Error()
	default:
		e.Message = fmt.Sprintf("exit status %d", code)
	}
	lines := strings.Split(e.Message, "\n")
	for i, l := range lines {
		lines[i] = display.Text(l, 400)
	}
	e.Message = strings.Join(lines, "\n")
	return e
}
