package audit

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the OCSF golden files")

// ocsfRequired is what OCSF requires of each class corral maps to, from
// the OCSF schema (github.com/ocsf/ocsf-schema, tag v1.2.0): base_event's
// required attributes, the class's and its category's (events/system/
// system.json: actor, device; events/network/network.json: dst_endpoint,
// src_endpoint), and of the objects they hold (metadata: product,
// version; product: vendor_name; api: operation; device: type_id;
// process: at least one of pid, uid; actor: at least one of process,
// user, session, app_name, app_uid, ...; url: at least one of url_string,
// path). Dotted paths are nested objects; "a|b" is "at least one of".
var ocsfRequired = map[int][]string{
	// 1007 Process Activity (events/system/process.json): process.
	ClassProcessActivity: {"actor", "actor.app_name|actor.user|actor.process|actor.session", "device", "device.type_id", "process", "process.pid|process.uid"},
	// 4001 Network Activity (events/network/network_activity.json).
	ClassNetworkActivity: {"dst_endpoint", "dst_endpoint.ip|dst_endpoint.hostname|dst_endpoint.name|dst_endpoint.uid", "src_endpoint", "src_endpoint.ip|src_endpoint.hostname|src_endpoint.name|src_endpoint.uid"},
	// 4002 HTTP Activity (events/network/http.json): http_request, http_response.
	ClassHTTPActivity: {"dst_endpoint", "src_endpoint", "http_request", "http_request.url.url_string|http_request.url.path", "http_response"},
	// 6003 API Activity (events/application/api.json): actor, api, src_endpoint.
	ClassAPIActivity: {"actor", "actor.app_name|actor.user|actor.process|actor.session", "api", "api.operation", "src_endpoint", "src_endpoint.ip|src_endpoint.hostname|src_endpoint.name|src_endpoint.uid"},
}

// ocsfBase is base_event's required attributes (events/base_event.json)
// and metadata's (objects/metadata.json, objects/product.json).
var ocsfBase = []string{"activity_id", "category_uid", "class_uid", "metadata", "metadata.product", "metadata.product.vendor_name",
	"metadata.version", "severity_id", "time", "type_uid"}

func lookup(o map[string]any, path string) (any, bool) {
	var cur any = o
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[k]
		if !ok || cur == nil || cur == "" {
			return nil, false
		}
	}
	return cur, true
}

// sampleEvents has one event of every kind, with the fields its writers
// record.
func sampleEvents() []Event {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	ev := func(k Kind, f map[string]any) Event {
		return Event{Time: at, Kind: k, Box: "web-3f2a1c", Actor: ActorCLI, Fields: f}
	}
	return []Event{
		ev(KindCreate, nil), ev(KindStart, nil), ev(KindStop, nil), ev(KindIdleStop, nil),
		ev(KindSave, nil), ev(KindIdleSave, nil), ev(KindLowMemorySave, map[string]any{"free": "1.2GiB"}), ev(KindResume, nil), ev(KindRebuild, nil), ev(KindRm, nil),
		{Time: at, Kind: KindSessionStart, Box: "web-3f2a1c", Actor: ActorCLI, EnvNames: []string{"GH_TOKEN"}, Fields: map[string]any{"session": "a1b2c3", "agent": "claude"}},
		ev(KindSessionEnd, map[string]any{"session": "a1b2c3", "agent": "claude"}),
		ev(KindEgressDenied, map[string]any{"host": "evil.example", "port": float64(443), "reason": "host-not-allowed", "count": float64(3)}),
		ev(KindAllow, map[string]any{"entry": "api.example.test", "scope": "for", "expires": "2026-12-07T13:00:00Z", FieldSHA256: "ab"}),
		ev(KindGC, map[string]any{"removed": float64(2)}), ev(KindSnapshot, map[string]any{"name": "before"}),
		ev(KindRestore, map[string]any{"name": "before"}), ev(KindGitGuard, map[string]any{"path": ".git/hooks/pre-commit"}),
		ev(KindNestedGit, map[string]any{"paths": []any{"vendor/x"}}),
		ev(KindGitNameRefused, map[string]any{"call": "renameat2", "path": ".git", "why": "a .git entry"}),
		ev(KindPull, map[string]any{"commits": float64(3)}), ev(KindLearn, map[string]any{"op": "start"}),
		ev(KindCredentialUse, map[string]any{FieldCredential: "github", FieldSession: "a1b2c3", FieldUpstream: "https://github.com/org/repo", FieldMethod: "POST", FieldClass: "git-upload-pack", FieldCount: float64(4), FieldStatus: float64(200)}),
		ev(KindCredentialRefused, map[string]any{FieldCredential: "github", FieldReason: "method not allowed", FieldMethod: "DELETE", FieldUpstream: "https://api.github.com", FieldCount: float64(1)}),
		ev(KindHost, map[string]any{"op": "add", "host": "gpu", "url": "ssh://me@gpu.internal"}),
		ev(KindReceive, map[string]any{"branch": "main"}),
		ev(KindRefused, map[string]any{FieldOf: "allow", FieldReason: "the organisation's policy refuses it", "entry": "db.corp.example"}),
	}
}

// TestOCSFGolden: every kind maps to an OCSF event with every field its
// class requires; the events are golden files (go test -update).
func TestOCSFGolden(t *testing.T) {
	seen := map[Kind]bool{}
	for _, ev := range sampleEvents() {
		seen[ev.Kind] = true
		o := OCSF(ev, "laptop", "1.0.0")
		class := o["class_uid"].(int)
		want, ok := ocsfRequired[class]
		if !ok {
			t.Fatalf("%s: class %d has no required-field list", ev.Kind, class)
		}
		for _, path := range append(slices.Clone(ocsfBase), want...) {
			found := false
			for _, alt := range strings.Split(path, "|") {
				if _, ok := lookup(o, alt); ok {
					found = true
				}
			}
			if !found {
				t.Errorf("%s (class %d): required %s missing", ev.Kind, class, path)
			}
		}
		if o["type_uid"].(int) != class*100+o["activity_id"].(int) || o["category_uid"].(int) != class/1000 {
			t.Errorf("%s: type_uid %v category_uid %v", ev.Kind, o["type_uid"], o["category_uid"])
		}
		got, _ := json.MarshalIndent(o, "", "  ")
		golden := filepath.Join("testdata", "ocsf", string(ev.Kind)+".json")
		if *update {
			os.MkdirAll(filepath.Dir(golden), 0o755)
			os.WriteFile(golden, append(got, '\n'), 0o644)
			continue
		}
		wantB, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (go test ./core/audit -run OCSF -update writes it)", err)
		}
		if string(wantB) != string(got)+"\n" {
			t.Errorf("%s: OCSF event differs from %s:\n%s", ev.Kind, golden, got)
		}
	}
	for k := range ocsfClasses {
		if !seen[k] {
			t.Errorf("kind %s has no sample event (and no golden file)", k)
		}
	}
}

// TestEveryKindIsMapped: the mapping names every kind this package
// declares (a new kind must choose its OCSF class).
func TestEveryKindIsMapped(t *testing.T) {
	src, err := os.ReadFile("audit.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(src), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && strings.HasPrefix(f[0], "Kind") && f[1] == "Kind" && f[2] == "=" {
			k := Kind(strings.Trim(f[3], `"`))
			if _, ok := ocsfClasses[k]; !ok {
				t.Errorf("kind %s (%s) has no OCSF mapping", k, f[0])
			}
		}
	}
}

// TestOCSFDecisionGolden: egress decisions (allowed, denied) are Network
// Activity events and a box's request an API Activity event, each with
// its class's required fields; session marks have none.
func TestOCSFDecisionGolden(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for name, d := range map[string]Decision{
		"egress-allowed":         {Time: at, Box: "web-3f2a1c", Kind: "connect", Host: "api.example.test", Port: 443, IP: "192.0.2.10", Allowed: true, Raw: []byte(`{"kind":"connect"}`)},
		"egress-denied-decision": {Time: at, Box: "web-3f2a1c", Kind: "http", Host: "evil.example", Port: 80, Reason: "host-not-allowed", Count: 4, Raw: []byte(`{"kind":"http"}`)},
		"egress-request":         {Time: at, Box: "web-3f2a1c", Kind: "request", Request: "registry.example.test", Why: "npm install", Raw: []byte(`{"kind":"request"}`)},
	} {
		o, ok := OCSFDecision(d, "1.0.0")
		if !ok {
			t.Fatalf("%s: no event", name)
		}
		class := o["class_uid"].(int)
		for _, path := range append(slices.Clone(ocsfBase), ocsfRequired[class]...) {
			found := false
			for _, alt := range strings.Split(path, "|") {
				if _, ok := lookup(o, alt); ok {
					found = true
				}
			}
			if !found {
				t.Errorf("%s (class %d): required %s missing", name, class, path)
			}
		}
		got, _ := json.MarshalIndent(o, "", "  ")
		golden := filepath.Join("testdata", "ocsf", name+".json")
		if *update {
			os.WriteFile(golden, append(got, '\n'), 0o644)
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil || string(want) != string(got)+"\n" {
			t.Errorf("%s: differs from %s (%v):\n%s", name, golden, err, got)
		}
	}
	if _, ok := OCSFDecision(Decision{Kind: "session-start"}, ""); ok {
		t.Error("a session mark became an OCSF event")
	}
}
