// Package qmp is a small client of qemu's machine protocol (QMP) on a unix
// socket: the capabilities handshake, query-status, stop, quit and the
// human monitor commands corral suspends and resumes a box with (savevm,
// delvm, info snapshots).
//
// The socket is Lima's (<instance dir>/qmp.sock, qemu driver), and qemu
// runs the guest: everything read from it is decoded strictly, every
// message is capped at MaxMessage bytes, and every exchange has a
// deadline. One command is in flight at a time; asynchronous events that
// arrive meanwhile are read and dropped.
package qmp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/display"
)

// MaxMessage caps one message from qemu (a line of JSON). A savevm
// answer is a line of text; "info snapshots" of a disk with many
// snapshots is the longest answer corral asks for.
const MaxMessage = 1 << 20

// DefaultTimeout bounds an exchange whose context has no deadline.
const DefaultTimeout = 30 * time.Second

// ErrTooLong means qemu sent a message longer than MaxMessage.
var ErrTooLong = errors.New("qmp message too long")

// Error is an error qemu returned for a command.
type Error struct {
	Command string `json:"-"`
	Class   string `json:"class"`
	Desc    string `json:"desc"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("qmp %s: %s: %s", e.Command, e.Class, e.Desc)
}

// Status is query-status's answer.
type Status struct {
	Running bool `json:"running"`
	// Status is qemu's run state: "running", "paused", "postmigrate", ...
	Status     string `json:"status"`
	Singlestep bool   `json:"singlestep,omitempty"`
}

// message is every top-level shape qemu sends: the greeting, a return, an
// error, an event. Unknown top-level keys are refused.
type message struct {
	QMP       *json.RawMessage `json:"QMP"`
	Return    *json.RawMessage `json:"return"`
	Error     *Error           `json:"error"`
	ID        *json.RawMessage `json:"id"`
	Event     *string          `json:"event"`
	Data      *json.RawMessage `json:"data"`
	Timestamp *json.RawMessage `json:"timestamp"`
}

// Client is one QMP connection.
type Client struct {
	mu   sync.Mutex
	conn net.Conn
	r    *bufio.Reader
}

// Dial connects to the QMP socket at path, reads qemu's greeting and
// negotiates capabilities (none).
func Dial(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connecting to qmp %s: %w", path, err)
	}
	c := &Client{conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
	if err := c.handshake(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("connecting to qmp %s: %w", path, err)
	}
	return c, nil
}

func (c *Client) handshake(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	done := c.deadline(ctx)
	defer done()
	m, err := c.read()
	if err != nil {
		return fmt.Errorf("reading the greeting: %w", err)
	}
	if m.QMP == nil {
		return errors.New("reading the greeting: not a qmp greeting")
	}
	return c.exchange("qmp_capabilities", nil, nil)
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Execute runs a QMP command with args (nil for none) and decodes its
// return value into out (nil to ignore it).
func (c *Client) Execute(ctx context.Context, command string, args, out any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	done := c.deadline(ctx)
	defer done()
	return c.exchange(command, args, out)
}

// QueryStatus asks whether the VM runs.
func (c *Client) QueryStatus(ctx context.Context) (Status, error) {
	var st Status
	err := c.Execute(ctx, "query-status", nil, &st)
	return st, err
}

// Stop pauses the VM's CPUs.
func (c *Client) Stop(ctx context.Context) error { return c.Execute(ctx, "stop", nil, nil) }

// Cont resumes the VM's CPUs.
func (c *Client) Cont(ctx context.Context) error { return c.Execute(ctx, "cont", nil, nil) }

// Quit ends qemu (it closes the images cleanly). The connection closes
// with it.
func (c *Client) Quit(ctx context.Context) error {
	err := c.Execute(ctx, "quit", nil, nil)
	if errors.Is(err, io.EOF) {
		return nil // qemu closed the socket before or with the answer
	}
	return err
}

// HumanMonitorCommand runs one human monitor (HMP) command line and
// returns its output.
func (c *Client) HumanMonitorCommand(ctx context.Context, line string) (string, error) {
	var out string
	err := c.Execute(ctx, "human-monitor-command", map[string]string{"command-line": line}, &out)
	return out, err
}

var tagRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// CheckTag validates a snapshot tag: it goes into an HMP command line.
func CheckTag(tag string) error {
	if !tagRe.MatchString(tag) {
		return fmt.Errorf("invalid snapshot tag %q", tag)
	}
	return nil
}

// SaveVM saves the VM's state (RAM, devices, disks) as the internal
// snapshot tag. HMP reports a failure only as output text: any output is
// an error.
func (c *Client) SaveVM(ctx context.Context, tag string) error {
	return c.hmpQuiet(ctx, "savevm", tag)
}

// DelVM deletes the internal snapshot tag.
func (c *Client) DelVM(ctx context.Context, tag string) error {
	return c.hmpQuiet(ctx, "delvm", tag)
}

func (c *Client) hmpQuiet(ctx context.Context, verb, tag string) error {
	if err := CheckTag(tag); err != nil {
		return err
	}
	out, err := c.HumanMonitorCommand(ctx, verb+" "+tag)
	if err != nil {
		return err
	}
	if out = string(bytes.TrimSpace([]byte(out))); out != "" {
		return fmt.Errorf("qmp %s %s: %s", verb, tag, display.Text(out, 200))
	}
	return nil
}

// exchange sends one command and reads until its answer, dropping events.
// The caller holds mu and has set the deadline.
func (c *Client) exchange(command string, args, out any) error {
	req := struct {
		Execute   string `json:"execute"`
		Arguments any    `json:"arguments,omitempty"`
	}{command, args}
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("qmp %s: %w", command, err)
	}
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("qmp %s: %w", command, err)
	}
	for {
		m, err := c.read()
		if err != nil {
			return fmt.Errorf("qmp %s: %w", command, err)
		}
		switch {
		case m.Event != nil:
			continue
		case m.Error != nil:
			m.Error.Command = command
			return m.Error
		case m.Return != nil:
			if out == nil {
				return nil
			}
			// The envelope is strict; a return value may gain fields in
			// a later qemu, so only its known ones are read.
			if err := json.Unmarshal(*m.Return, out); err != nil {
				return fmt.Errorf("qmp %s: decoding the answer: %w", command, err)
			}
			return nil
		default:
			return fmt.Errorf("qmp %s: unexpected message", command)
		}
	}
}

// read reads one message of at most MaxMessage bytes.
func (c *Client) read() (message, error) {
	var line []byte
	for {
		chunk, err := c.r.ReadSlice('\n')
		if len(line)+len(chunk) > MaxMessage {
			return message{}, ErrTooLong
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return message{}, err
		}
		break
	}
	var m message
	if err := strictUnmarshal(line, &m); err != nil {
		return message{}, fmt.Errorf("decoding a qmp message: %w", err)
	}
	return m, nil
}

// deadline applies ctx's deadline, or DefaultTimeout, to the connection,
// and makes a cancelled ctx end a blocked read.
func (c *Client) deadline(ctx context.Context) func() {
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Now().Add(DefaultTimeout)
	}
	_ = c.conn.SetDeadline(d)
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	return func() { stop() }
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}
