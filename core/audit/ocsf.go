package audit

// OCSF: the audit events as the Open Cybersecurity Schema Framework's
// classes, for a SIEM (`corral audit --format ocsf`, and what the managed
// [audit] forward sends). docs/ORGANISATIONS.md has the mapping, one row
// per event kind; ocsfClasses below is that table.
//
// Classes used (OCSF 1.2.0, class_uid; category_uid is class_uid / 1000):
//
//	1007 Process Activity  (System Activity)       sessions of an agent in a box
//	4001 Network Activity  (Network Activity)      egress decisions and denials
//	4002 HTTP Activity     (Network Activity)      brokered credential uses and refusals
//	6003 API Activity      (Application Activity)  box lifecycle, grants, refusals, git guards
//
// Every event carries what OCSF requires of its class (ocsf_test.go lists
// the fields, from the schema's class and object definitions), corral's
// own fields under "unmapped", and the original event under raw_data.

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// OCSFVersion is the OCSF schema version the events follow.
const OCSFVersion = "1.2.0"

// OCSF class uids.
const (
	ClassProcessActivity = 1007
	ClassNetworkActivity = 4001
	ClassHTTPActivity    = 4002
	ClassAPIActivity     = 6003
)

// ocsfClass is how one kind maps: its class and activity.
type ocsfClass struct {
	Class    int
	Activity int
	Name     string // the activity's OCSF name
	Failure  bool   // status Failure (a refusal or a denial)
}

// ocsfClasses is the mapping, one entry per kind. API Activity's
// activities: 1 Create, 2 Read, 3 Update, 4 Delete, 99 Other; Process
// Activity's: 1 Launch, 2 Terminate; Network Activity's: 1 Open, 5 Refuse.
var ocsfClasses = map[Kind]ocsfClass{
	KindCreate:            {ClassAPIActivity, 1, "Create", false},
	KindStart:             {ClassAPIActivity, 3, "Update", false},
	KindStop:              {ClassAPIActivity, 3, "Update", false},
	KindIdleStop:          {ClassAPIActivity, 3, "Update", false},
	KindSave:              {ClassAPIActivity, 3, "Update", false},
	KindIdleSave:          {ClassAPIActivity, 3, "Update", false},
	KindLowMemorySave:     {ClassAPIActivity, 3, "Update", false},
	KindResume:            {ClassAPIActivity, 3, "Update", false},
	KindRebuild:           {ClassAPIActivity, 3, "Update", false},
	KindRm:                {ClassAPIActivity, 4, "Delete", false},
	KindSessionStart:      {ClassProcessActivity, 1, "Launch", false},
	KindSessionEnd:        {ClassProcessActivity, 2, "Terminate", false},
	KindEgressDenied:      {ClassNetworkActivity, 5, "Refuse", true},
	KindAllow:             {ClassAPIActivity, 1, "Create", false},
	KindGC:                {ClassAPIActivity, 4, "Delete", false},
	KindSnapshot:          {ClassAPIActivity, 1, "Create", false},
	KindRestore:           {ClassAPIActivity, 3, "Update", false},
	KindGitGuard:          {ClassAPIActivity, 3, "Update", true},
	KindNestedGit:         {ClassAPIActivity, 2, "Read", false},
	KindGitNameRefused:    {ClassAPIActivity, 99, "Other", true},
	KindPull:              {ClassAPIActivity, 2, "Read", false},
	KindLearn:             {ClassAPIActivity, 3, "Update", false},
	KindCredentialUse:     {ClassHTTPActivity, 0, "", false}, // activity by method
	KindCredentialRefused: {ClassHTTPActivity, 0, "", true},
	KindHost:              {ClassAPIActivity, 3, "Update", false},
	KindReceive:           {ClassAPIActivity, 1, "Create", false},
	KindRefused:           {ClassAPIActivity, 99, "Other", true},
}

// OCSFClassOf is the OCSF class uid kind maps to (API Activity for a kind
// this version does not know).
func OCSFClassOf(k Kind) int {
	if c, ok := ocsfClasses[k]; ok {
		return c.Class
	}
	return ClassAPIActivity
}

// httpActivity is HTTP Activity's activity per method.
var httpActivity = map[string]int{"CONNECT": 1, "DELETE": 2, "GET": 3, "HEAD": 4, "OPTIONS": 5, "POST": 6, "PUT": 7, "TRACE": 8}

// OCSF returns ev as one OCSF event. host is this machine's name (the
// device and the source of API calls), version corral's.
func OCSF(ev Event, host, version string) map[string]any {
	c, ok := ocsfClasses[ev.Kind]
	if !ok {
		c = ocsfClass{ClassAPIActivity, 99, "Other", false}
	}
	str := func(k string) string { s, _ := ev.Fields[k].(string); return s }
	num := func(k string) int { f, _ := ev.Fields[k].(float64); n, _ := ev.Fields[k].(int); return n + int(f) }
	activity, name := c.Activity, c.Name
	if c.Class == ClassHTTPActivity {
		m := strings.ToUpper(str(FieldMethod))
		if a, ok := httpActivity[m]; ok {
			activity, name = a, strings.ToUpper(m[:1])+strings.ToLower(m[1:])
		} else {
			activity, name = 99, "Other"
		}
	}
	raw, _ := json.Marshal(ev)
	o := map[string]any{
		"time":          ev.Time.UnixMilli(),
		"class_uid":     c.Class,
		"category_uid":  c.Class / 1000,
		"activity_id":   activity,
		"activity_name": name,
		"type_uid":      c.Class*100 + activity,
		"severity_id":   1, // Informational
		"status_id":     1, // Success
		"status":        "Success",
		"message":       ocsfMessage(ev),
		"metadata": map[string]any{
			"version":  OCSFVersion,
			"log_name": "audit",
			"product":  map[string]any{"name": "corral", "vendor_name": "corral", "version": version},
			"uid":      Written(raw)[:32],
		},
		"raw_data": string(raw),
	}
	if c.Failure {
		o["severity_id"], o["status_id"], o["status"] = 3, 2, "Failure" // Medium
	}
	unmapped := map[string]any{"kind": string(ev.Kind)}
	if ev.Box != "" {
		unmapped["box"] = ev.Box
	}
	if ev.Actor != "" {
		unmapped["actor"] = string(ev.Actor)
	}
	for k, v := range ev.Fields {
		unmapped[k] = v
	}
	if len(ev.EnvNames) > 0 {
		unmapped["env_names"] = ev.EnvNames
	}
	o["unmapped"] = unmapped
	box := map[string]any{"name": ev.Box, "uid": ev.Box, "type": "Virtual", "type_id": 6}
	here := map[string]any{"hostname": host, "name": host}
	actor := map[string]any{"app_name": "corral " + orDash(string(ev.Actor))}

	switch c.Class {
	case ClassNetworkActivity:
		dst := map[string]any{"hostname": str("host"), "port": num("port")}
		if ip := str("ip"); ip != "" {
			dst["ip"] = ip
		}
		o["src_endpoint"] = map[string]any{"name": ev.Box, "uid": ev.Box}
		o["dst_endpoint"] = dst
		o["action_id"], o["action"] = 2, "Denied"
		o["disposition_id"], o["disposition"] = 2, "Blocked"
		if n := num(FieldCount); n > 0 {
			o["count"] = n
		}
	case ClassHTTPActivity:
		up := str(FieldUpstream)
		o["src_endpoint"] = map[string]any{"name": ev.Box, "uid": ev.Box}
		o["dst_endpoint"] = map[string]any{"hostname": upstreamHost(up)}
		o["http_request"] = map[string]any{"http_method": strings.ToUpper(str(FieldMethod)),
			"url": map[string]any{"url_string": up, "path": str(FieldClass)}}
		code := num(FieldStatus)
		if c.Failure && code == 0 {
			code = 403
		}
		o["http_response"] = map[string]any{"code": code}
		if n := num(FieldCount); n > 0 {
			o["count"] = n
		}
	case ClassProcessActivity:
		o["actor"] = actor
		o["device"] = box
		o["process"] = map[string]any{"uid": str(FieldSession), "name": str("agent")}
	default:
		o["actor"] = actor
		o["api"] = map[string]any{"operation": string(ev.Kind), "service": map[string]any{"name": "corral"}}
		o["src_endpoint"] = here
		res := []any{}
		if ev.Box != "" {
			res = append(res, map[string]any{"name": ev.Box, "type": "box"})
		}
		if e := str("entry"); e != "" {
			res = append(res, map[string]any{"name": e, "type": "egress allow entry"})
		}
		o["resources"] = res
	}
	return o
}

// ocsfMessage is one line a person reads in the SIEM.
func ocsfMessage(ev Event) string {
	var parts []string
	for _, k := range []string{"host", "entry", "scope", FieldCredential, FieldMethod, FieldReason, "op"} {
		if v, ok := ev.Fields[k]; ok {
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	msg := string(ev.Kind)
	if ev.Box != "" {
		msg += " box " + ev.Box
	}
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, " ")
	}
	return msg
}

func upstreamHost(u string) string {
	s := u
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Decision is one line of a box's egress log (core/egress Entry) as the
// OCSF mapping reads it: a broker decision (Kind "connect" or "http"), or
// a request the box filed (Kind "request").
type Decision struct {
	Time    time.Time
	Box     string
	Kind    string
	Host    string
	Port    int
	IP      string
	Allowed bool
	Reason  string
	Count   int
	// Request and Why are a request's entry and the box's words.
	Request, Why string
	// Raw is the log line, for raw_data.
	Raw []byte
}

// OCSFDecision returns a broker decision as one OCSF Network Activity
// event (4001: Open for an allowed connection, Refuse for a denied one)
// and a box's request as an API Activity event (6003, operation
// "egress-request": the box asked, nothing was granted). Session marks
// (ok false) have no OCSF event: the audit log's session events are.
func OCSFDecision(d Decision, version string) (map[string]any, bool) {
	var class, activity int
	var name string
	switch {
	case d.Kind == "request":
		class, activity, name = ClassAPIActivity, 1, "Create"
	case d.Kind == "connect" || d.Kind == "http":
		class, activity, name = ClassNetworkActivity, 1, "Open"
		if !d.Allowed {
			activity, name = 5, "Refuse"
		}
	default:
		return nil, false
	}
	raw := string(d.Raw)
	o := map[string]any{
		"time":          d.Time.UnixMilli(),
		"class_uid":     class,
		"category_uid":  class / 1000,
		"activity_id":   activity,
		"activity_name": name,
		"type_uid":      class*100 + activity,
		"severity_id":   1,
		"status_id":     1,
		"status":        "Success",
		"metadata": map[string]any{
			"version":  OCSFVersion,
			"log_name": "egress",
			"product":  map[string]any{"name": "corral", "vendor_name": "corral", "version": version},
			"uid":      Written(d.Raw)[:32],
		},
		"raw_data": raw,
	}
	unmapped := map[string]any{"box": d.Box, "kind": d.Kind}
	if class == ClassAPIActivity {
		o["actor"] = map[string]any{"app_name": "a program in box " + d.Box}
		o["api"] = map[string]any{"operation": "egress-request", "service": map[string]any{"name": "corral"}}
		o["src_endpoint"] = map[string]any{"name": d.Box, "uid": d.Box}
		o["resources"] = []any{map[string]any{"name": d.Box, "type": "box"}, map[string]any{"name": d.Request, "type": "requested entry"}}
		o["message"] = fmt.Sprintf("box %s requests %s", d.Box, d.Request)
		unmapped["request"], unmapped["why"] = d.Request, d.Why
		o["unmapped"] = unmapped
		return o, true
	}
	dst := map[string]any{"hostname": d.Host, "port": d.Port}
	if d.IP != "" {
		dst["ip"] = d.IP
	}
	o["src_endpoint"] = map[string]any{"name": d.Box, "uid": d.Box}
	o["dst_endpoint"] = dst
	o["connection_info"] = map[string]any{"protocol_name": "tcp", "direction_id": 2, "direction": "Outbound"}
	if d.Allowed {
		o["action_id"], o["action"] = 1, "Allowed"
		o["disposition_id"], o["disposition"] = 1, "Allowed"
		o["message"] = fmt.Sprintf("box %s: %s:%d allowed", d.Box, d.Host, d.Port)
	} else {
		o["action_id"], o["action"] = 2, "Denied"
		o["disposition_id"], o["disposition"] = 2, "Blocked"
		o["severity_id"], o["status_id"], o["status"] = 3, 2, "Failure"
		o["message"] = fmt.Sprintf("box %s: %s:%d denied: %s", d.Box, d.Host, d.Port, d.Reason)
		unmapped["reason"] = d.Reason
	}
	if d.Count > 1 {
		o["count"] = d.Count
	}
	o["unmapped"] = unmapped
	return o, true
}
