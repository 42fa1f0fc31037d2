package box

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/lima"
)

// toolregTimeout bounds a guest script: asking a golden's toolchains
// (each probe is a local command; npm's start is the slowest under TCG).
const toolregTimeout = 5 * time.Minute

// guestScript runs script with sh in a running instance as its default
// user (ssh, stdin) and returns at most limit bytes of its stdout: how a
// golden build asks its toolchains (golden.Images.GuestScript).
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
