package box

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/toolreg"
	"github.com/corral-dev/corral/guest"
)

// toolregTimeout bounds asking a golden's toolchains (each probe is a
// local command; npm's start is the slowest under TCG).
const toolregTimeout = 5 * time.Minute

// recordToolchains asks the running golden image's toolchains where they
// download from (guest.ToolchainRegistries over ssh, as the box user) and
// records the answer with the golden (core/toolreg): boxes cloned from it
// get it as their "toolchains" egress group. The output is hostile and
// parsed on the host. A failure is recorded as a note and never fails the
// build: the boxes then have no toolchains group.
func (s *Service) recordToolchains(ctx context.Context, golden string) {
	rec := toolreg.Record{}
	out, err := s.guestScript(ctx, golden, guest.ToolchainRegistries(), toolreg.MaxOutput+1)
	if err == nil {
		rec, err = toolreg.ParseBytes(out)
	}
	if err != nil {
		rec.Notes = append(rec.Notes, display.Text("asking the toolchains failed: "+err.Error(), 300))
	}
	rec.Golden, rec.Built = golden, s.now()
	if err := toolreg.Write(s.Layout, rec); err != nil {
		s.Logger.Warn("recording toolchain registries", "golden", golden, "err", err)
		return
	}
	if entries := rec.Entries(); len(entries) > 0 {
		shown := make([]string, len(entries))
		for i, e := range entries {
			shown[i] = display.Authority(e, 0)
		}
		s.progress("golden image %s: its toolchains download from %s (the boxes' \"toolchains\" egress group)", golden, strings.Join(shown, ", "))
	}
}

// guestScript runs script with sh in a running instance as its default
// user (ssh, stdin) and returns at most limit bytes of its stdout.
func (s *Service) guestScript(ctx context.Context, name, script string, limit int) ([]byte, error) {
	argv, err := s.Lima.SSHArgs(name, lima.SSHOptions{})
	if err != nil {
		return nil, err
	}
	argv = append(argv, "-o", "LogLevel=ERROR", "-T", "--", "sh -s")
	ctx, cancel := context.WithTimeout(ctx, toolregTimeout)
	defer cancel()
	cmd := s.guestCmd(ctx, argv, nil)
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = strings.NewReader(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &capWriter{w: &stdout, left: limit}
	cmd.Stderr = &capWriter{w: &stderr, left: guestStderrCap}
	if err := cmd.Run(); err != nil {
		if msg := lastLine(stderr.String()); msg != "" {
			return nil, fmt.Errorf("running a script in %s: %w: %s", name, err, display.Text(msg, 200))
		}
		return nil, fmt.Errorf("running a script in %s: %w", name, err)
	}
	return stdout.Bytes(), nil
}
