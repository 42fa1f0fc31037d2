package remotebox

import (
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/project"
)

// FuzzDecodeList: whatever a host prints, the decoder returns an error or
// boxes that keep every rule the menu relies on: at most MaxBoxes, names
// that pass the box name rule (so they can be argv words and menu keys),
// unique and sorted; a project that is "" or an absolute, clean path with
// nothing unsafe to show; a known state; counts in range.
func FuzzDecodeList(f *testing.F) {
	for _, s := range []string{
		`[]`, `[{"name":"web-1","project":"/p","state":"Running","network":"broker","mem_bytes":1,"idle_ns":5,"live_sessions":1}]`,
		`[{"name":"a","state":"Stopped","saved":{},"provisioning":true}]`, `[{"name":"a","name":"b"}]`, `[{"Name":"a"}]`,
		`[{"name":"a","state":"Running","project":"/a/../b"}]`, `[{"name":"a\u001b","state":"Running"}]`, `{}`, `[1]`, `[[]]`,
		`[{"name":"a","state":"Running","learning_until":"2026-01-01T00:00:00Z"}] x`,
	} {
		f.Add([]byte(s))
		f.Add([]byte(`{"schema":"corral.boxes/v1","boxes":` + s + `}`))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		boxes, err := DecodeList(data)
		if err != nil {
			if boxes != nil {
				t.Fatal("boxes with an error")
			}
			return
		}
		if len(boxes) > MaxBoxes {
			t.Fatalf("%d boxes", len(boxes))
		}
		if !slices.IsSortedFunc(boxes, func(a, b Box) int { return strings.Compare(a.Name, b.Name) }) {
			t.Fatal("not sorted")
		}
		for i, b := range boxes {
			if err := project.CheckName(b.Name, ""); err != nil {
				t.Fatalf("name %q: %v", b.Name, err)
			}
			if i > 0 && boxes[i-1].Name == b.Name {
				t.Fatalf("%q twice", b.Name)
			}
			if b.Project != "" && !usablePath(b.Project) {
				t.Fatalf("project %q", b.Project)
			}
			if !slices.Contains(boxstate.All, b.State) {
				t.Fatalf("state %q", b.State)
			}
			if b.Idle < 0 || b.Sessions < 0 || b.Sessions > 1<<16 {
				t.Fatalf("idle %s, sessions %d", b.Idle, b.Sessions)
			}
		}
	})
}

// FuzzDecodeEgress: an accepted answer gives at most MaxDenials denials,
// newest first, with ports in range and bounded hosts; an answer about
// another box is never accepted.
func FuzzDecodeEgress(f *testing.F) {
	for _, s := range []string{
		`{"box":"b","destinations":[]}`,
		`{"box":"b","destinations":[{"host":"a.test","port":443,"allowed":false,"count":2,"last_seen":"2026-01-01T00:00:00Z","reason":"host-not-allowed"}]}`,
		`{"box":"b","destinations":[{"host":"\u001b[2J","port":0,"allowed":false,"count":1,"reason":"malformed-authority"}]}`,
		`{"box":"c","destinations":[]}`, `{"box":"b"}`, `{"box":"b","box":"b","destinations":[]}`,
		`{"box":"b","destinations":[{"port":70000}]}`, `{"box":"b","destinations":[]}{}`,
	} {
		f.Add([]byte(s))
		f.Add([]byte(`{"schema":"corral.egress/v1",` + s[1:]))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := DecodeEgress(data, "b")
		if err != nil {
			return
		}
		if _, err := DecodeEgress(data, "c"); err == nil {
			t.Fatal("accepted as an answer about two boxes")
		}
		if len(ds) > MaxDenials {
			t.Fatalf("%d denials", len(ds))
		}
		for i, d := range ds {
			if d.Port < 0 || d.Port > 65535 || len(d.Host) > maxHost || d.Count < 0 {
				t.Fatalf("denial %+v", d)
			}
			if i > 0 && ds[i-1].Last.Before(d.Last) {
				t.Fatal("not newest first")
			}
		}
	})
}
