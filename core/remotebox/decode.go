package remotebox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/project"
)

// object is one JSON object read by exact key: each key at most once, at
// most maxKeys keys, values left raw until the reader asks for one by its
// exact name (encoding/json would match struct fields case-insensitively
// and keep the last of a duplicated key: neither may decide here what a
// key is).
type object map[string]json.RawMessage

// readObject reads the next value of dec as an object.
func readObject(dec *json.Decoder) (object, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	o := object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("object key is not a string")
		}
		if len(o) == maxKeys {
			return nil, fmt.Errorf("an object with more than %d keys", maxKeys)
		}
		if _, dup := o[key]; dup {
			return nil, fmt.Errorf("key %s given twice", quote(key))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o[key] = v
	}
	return o, expectDelim(dec, '}')
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return fmt.Errorf("want %q, got %s", d, quote(fmt.Sprint(tok)))
	}
	return nil
}

// readArray calls each for every element of the next value of dec, an
// array of at most max elements.
func readArray(dec *json.Decoder, max int, what string, each func(*json.Decoder) error) error {
	if err := expectDelim(dec, '['); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for n := 0; dec.More(); n++ {
		if n == max {
			return fmt.Errorf("%s: more than %d", what, max)
		}
		if err := each(dec); err != nil {
			return err
		}
	}
	return expectDelim(dec, ']')
}

// end refuses anything but white space after the document.
func end(dec *json.Decoder) error {
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the document")
	}
	return nil
}

// newDecoder reads data, which must be at most max bytes.
func newDecoder(data []byte, max int) (*json.Decoder, error) {
	if len(data) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec, nil
}

// get decodes the value of key into v when key is there (and not null).
// v is a string, bool, integer or time.Time pointer: a value of another
// JSON type is an error, as is a fraction or a sign where v cannot hold it.
func (o object) get(key string, v any) error {
	raw, ok := o[key]
	if !ok || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

// text decodes a string of at most max bytes.
func (o object) text(key string, max int) (string, error) {
	var s string
	if err := o.get(key, &s); err != nil {
		return "", err
	}
	if len(s) > max {
		return "", fmt.Errorf("%s: longer than %d bytes", key, max)
	}
	return s, nil
}

// The schemas of the answers read here, as cmd/corral/cli prints them
// (SchemaBoxes, SchemaEgress there; its tests decode its output with
// these readers). Both sides are the same build (remote.CheckVersion).
const (
	SchemaBoxes  = "corral.boxes/v1"
	SchemaEgress = "corral.egress/v1"
)

// schema refuses a document whose "schema" is not want.
func (o object) schema(want string) error {
	got, err := o.text("schema", maxShort)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("schema %s, want %s", quote(got), want)
	}
	return nil
}

// DecodeList decodes what `corral ls --json` printed on a remote host: an
// object of schema SchemaBoxes whose "boxes" are box objects (box.Status),
// at most MaxBoxes, names unique.
// It reads only the keys the menu shows (see the package comment), each
// strictly; any problem refuses the whole answer.
func DecodeList(data []byte) ([]Box, error) {
	top, err := newDecoder(data, MaxListBytes)
	if err != nil {
		return nil, err
	}
	doc, err := readObject(top)
	if err == nil {
		err = end(top)
	}
	if err == nil {
		err = doc.schema(SchemaBoxes)
	}
	if err != nil {
		return nil, err
	}
	raw, ok := doc["boxes"]
	if !ok {
		return nil, errors.New("no boxes")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var boxes []Box
	seen := map[string]bool{}
	err = readArray(dec, MaxBoxes, "boxes", func(dec *json.Decoder) error {
		o, err := readObject(dec)
		if err != nil {
			return fmt.Errorf("box %d: %w", len(boxes)+1, err)
		}
		b, err := decodeBox(o)
		if err != nil {
			return fmt.Errorf("box %d: %w", len(boxes)+1, err)
		}
		if seen[b.Name] {
			return fmt.Errorf("box %s listed twice", b.Name)
		}
		seen[b.Name] = true
		boxes = append(boxes, b)
		return nil
	})
	if err == nil {
		err = end(dec)
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(boxes, func(a, b Box) int { return strings.Compare(a.Name, b.Name) })
	return boxes, nil
}

// decodeBox reads one box object of ls --json.
func decodeBox(o object) (Box, error) {
	var b Box
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	name, err := o.text("name", 256)
	add(err)
	if err == nil {
		if cerr := project.CheckName(name, ""); cerr != nil {
			add(fmt.Errorf("name %s: not a box name", quote(name)))
		}
	}
	b.Name = name
	// A path that is too long or odd is dropped below, not the box.
	proj, err := o.text("project", 64<<10)
	add(err)
	if usablePath(proj) {
		b.Project = proj
	}
	state, err := o.text("state", maxShort)
	add(err)
	vm := boxstate.State(state)
	if err == nil && !slices.Contains(boxstate.All, vm) {
		add(fmt.Errorf("state %s: not a box state", quote(state)))
	}
	var provisioning bool
	add(o.get("provisioning", &provisioning))
	perr, err := o.text("provision_error", 64<<10)
	add(err)
	saved := false
	if raw, ok := o["saved"]; ok && string(raw) != "null" {
		// Its contents are not shown; it must be an object all the same.
		if _, err := readObject(json.NewDecoder(bytes.NewReader(raw))); err != nil {
			add(fmt.Errorf("saved: %w", err))
		}
		saved = true
	}
	b.State = boxstate.Of(boxstate.Facts{VM: vm, Provisioning: provisioning, ProvisionFailed: perr != "", Saved: saved})
	add(o.get("mem_bytes", &b.MemBytes))
	add(o.get("peak_bytes", &b.PeakBytes))
	add(o.get("memory_cap", &b.MemCapBytes))
	var idle int64
	add(o.get("idle_ns", &idle))
	if idle < 0 {
		add(errors.New("idle_ns: negative"))
	}
	b.Idle = time.Duration(idle)
	add(o.get("live_sessions", &b.Sessions))
	if b.Sessions < 0 || b.Sessions > 1<<16 {
		add(fmt.Errorf("live_sessions: %d out of range", b.Sessions))
	}
	network, err := o.text("network", maxShort)
	add(err)
	b.Broker = network == "broker" || network == "learn"
	add(o.get("learning_until", &b.LearningUntil))
	if err := errors.Join(errs...); err != nil {
		return Box{}, err
	}
	return b, nil
}

// DecodeEgress decodes what `corral egress --json -- BOX` printed on a
// remote host: one object of schema SchemaEgress whose "box" is box and whose "destinations"
// (at most MaxDestinations) are summaries of the box's decision log. It
// returns the denied ones, newest first, at most MaxDenials.
func DecodeEgress(data []byte, box string) ([]Denial, error) {
	dec, err := newDecoder(data, MaxEgressBytes)
	if err != nil {
		return nil, err
	}
	o, err := readObject(dec)
	if err == nil {
		err = end(dec)
	}
	if err != nil {
		return nil, err
	}
	if err := o.schema(SchemaEgress); err != nil {
		return nil, err
	}
	got, err := o.text("box", 256)
	if err != nil {
		return nil, err
	}
	if got != box {
		return nil, fmt.Errorf("the answer is about box %s, not %s", quote(got), box)
	}
	raw, ok := o["destinations"]
	if !ok {
		return nil, errors.New("no destinations")
	}
	var out []Denial
	dd := json.NewDecoder(bytes.NewReader(raw))
	dd.UseNumber()
	err = readArray(dd, MaxDestinations, "destinations", func(dec *json.Decoder) error {
		d, err := readObject(dec)
		if err != nil {
			return fmt.Errorf("destination: %w", err)
		}
		den, allowed, err := decodeDest(d)
		if err != nil {
			return fmt.Errorf("destination: %w", err)
		}
		if !allowed {
			out = append(out, den)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b Denial) int {
		if c := b.Last.Compare(a.Last); c != 0 {
			return c
		}
		return strings.Compare(a.Host, b.Host)
	})
	if len(out) > MaxDenials {
		out = out[:MaxDenials]
	}
	return out, nil
}

// decodeDest reads one destination summary of egress --json.
func decodeDest(o object) (Denial, bool, error) {
	var d Denial
	var allowed bool
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	host, err := o.text("host", maxHost)
	add(err)
	d.Host = host
	add(o.get("port", &d.Port))
	if d.Port < 0 || d.Port > 65535 {
		add(fmt.Errorf("port %d out of range", d.Port))
	}
	add(o.get("allowed", &allowed))
	add(o.get("count", &d.Count))
	if d.Count < 0 || d.Count > math.MaxInt32 {
		add(fmt.Errorf("count %d out of range", d.Count))
	}
	add(o.get("last_seen", &d.Last))
	reason, err := o.text("reason", maxShort)
	add(err)
	r := egress.Reason(reason)
	d.Malformed = r == egress.ReasonMalformedAuthority || r == egress.ReasonUserinfo
	if err := errors.Join(errs...); err != nil {
		return Denial{}, false, err
	}
	return d, allowed, nil
}

// quote shows a string the host sent inside an error: bounded, made safe.
func quote(s string) string {
	return strconv.Quote(display.Text(s, 64))
}
