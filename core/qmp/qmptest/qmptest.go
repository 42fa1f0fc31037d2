// Package qmptest is a fake qemu QMP server for tests of core/qmp and of
// the code that drives a VM through it (core/box save and resume).
package qmptest

import (
	"bufio"
	"encoding/json"
	"net"
	"testing"
)

// Close, as an answer, makes the fake close the connection (qemu exiting).
const Close = "<close>"

// Greeting is qemu 7.2's QMP greeting.
const Greeting = `{"QMP": {"version": {"qemu": {"micro": 0, "minor": 2, "major": 7}, "package": ""}, "capabilities": ["oob"]}}`

// Serve answers QMP on a unix socket at sock until the test ends: every
// connection gets greet (none when empty), then each command its lines
// from answer(execute, arguments), until an answer is Close or the client
// goes. A request that is not JSON fails the test.
func Serve(t testing.TB, sock, greet string, answer func(execute string, args map[string]any) []string) {
	t.Helper()
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serveConn(t, c, greet, answer)
		}
	}()
}

func serveConn(t testing.TB, c net.Conn, greet string, answer func(string, map[string]any) []string) {
	defer c.Close()
	if greet != "" {
		if _, err := c.Write([]byte(greet + "\n")); err != nil {
			return
		}
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var req struct {
			Execute   string         `json:"execute"`
			Arguments map[string]any `json:"arguments"`
		}
		if err := json.Unmarshal(line, &req); err != nil {
			t.Errorf("qmptest: bad request %q: %v", line, err)
			return
		}
		for _, a := range answer(req.Execute, req.Arguments) {
			if a == Close {
				return
			}
			if _, err := c.Write([]byte(a + "\n")); err != nil {
				return
			}
		}
	}
}
