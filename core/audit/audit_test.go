package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/jsonl"
)

func TestRecordAndRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	evs := []Event{
		{Time: t0, Kind: KindCreate, Box: "a", Actor: ActorCLI},
		{Time: t0.Add(time.Minute), Kind: KindEgressDenied, Box: "b", Actor: ActorApp, Fields: map[string]any{"host": "example.test", "port": 443}},
		func() Event {
			e := SessionStart("a", ActorCLI, []string{"ANTHROPIC_API_KEY", "GH_TOKEN"})
			e.Time = t0.Add(2 * time.Minute)
			return e
		}(),
		{Time: t0.Add(3 * time.Minute), Kind: KindIdleStop, Box: "a", Actor: ActorSweep},
	}
	for _, ev := range evs {
		if err := l.Record(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	all, err := Read(path, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 {
		t.Fatalf("read %d events, want 4", len(all))
	}
	if !all[0].Time.Equal(t0) || all[0].Time.Location() != time.UTC {
		t.Errorf("time = %v, want %v in UTC", all[0].Time, t0)
	}
	if got := all[1].Fields; got["host"] != "example.test" || got["port"] != float64(443) {
		t.Errorf("fields = %v", got)
	}
	if got := all[2]; got.Kind != KindSessionStart || !reflect.DeepEqual(got.EnvNames, []string{"ANTHROPIC_API_KEY", "GH_TOKEN"}) {
		t.Errorf("session start = %+v", got)
	}

	a, err := Read(path, Filter{Box: "a", Since: t0.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 2 || a[0].Kind != KindSessionStart || a[1].Kind != KindIdleStop {
		t.Errorf("filtered = %+v", a)
	}
}

func TestRecordFillsTimeAndRejectsEmptyKind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fixed := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	l.now = func() time.Time { return fixed }
	if err := l.Record(Event{Kind: KindGC}); err != nil {
		t.Fatal(err)
	}
	if err := l.Record(Event{Box: "a"}); err == nil {
		t.Error("Record with empty kind succeeded")
	}
	evs, err := Read(path, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || !evs[0].Time.Equal(fixed) {
		t.Errorf("events = %+v", evs)
	}
}

func TestReadSkipsBadLinesAndMissingFile(t *testing.T) {
	dir := t.TempDir()
	evs, err := Read(filepath.Join(dir, "none.jsonl"), Filter{})
	if err != nil || len(evs) != 0 {
		t.Fatalf("missing log: %v, %v", evs, err)
	}
	path := filepath.Join(dir, "audit.jsonl")
	data := strings.Join([]string{
		`{"time":"2026-01-01T00:00:00Z","kind":"start","box":"a","actor":"cli"}`,
		`not json`,
		`{"time":"2026-01-01T00:00:01Z"}`,
		`{"time":"2026-01-01T00:00:02Z","kind":"stop","box":"a","actor":"app"}`,
	}, "\n") + "\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	evs, err = Read(path, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Kind != KindStart || evs[1].Kind != KindStop {
		t.Errorf("events = %+v", evs)
	}
}

// The on-disk field names are a format other tools read; keep them stable.
func TestLineFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// A "NAME=value" entry is cut to its name.
	ev := SessionStart("demo", ActorCLI, []string{"GH_TOKEN=ghp_secret"})
	ev.Time = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := l.Record(ev); err != nil {
		t.Fatal(err)
	}
	l.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schema":"corral.audit-event/v1","time":"2026-01-01T00:00:00Z","kind":"session-start","box":"demo","actor":"cli","env_names":["GH_TOKEN"]}` + "\n"
	if string(b) != want {
		t.Errorf("line = %s\nwant   %s", b, want)
	}
}

// One box's flood of egress denials never rotates another box's events out.
func TestFloodKeepsOtherBoxesEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := jsonl.Open(path, jsonl.Options{MaxBytes: 16 << 10, Keep: Keep})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	l := &Log{w: w, now: time.Now}
	for i := range 10 {
		if err := l.Record(Event{Kind: KindSessionStart, Box: "victim", Fields: map[string]any{"i": i}}); err != nil {
			t.Fatal(err)
		}
		for j := range 300 {
			if err := l.Record(Event{Kind: KindEgressDenied, Box: "flooder", Fields: map[string]any{"host": fmt.Sprintf("h%d-%d.test", i, j)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	evs, err := Read(path, Filter{Box: "victim"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 10 {
		t.Fatalf("%d victim events after the flood, want 10", len(evs))
	}
}
