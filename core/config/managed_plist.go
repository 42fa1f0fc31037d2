package config

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/BurntSushi/toml"
)

// ParseManagedPlist reads a configuration profile's managed preferences
// for corral (an XML property list, as `plutil -convert xml1` writes the
// file macOS keeps under /Library/Managed Preferences) as the same Floor
// the managed file holds: a plist key is a Floor key, a <string>,
// <integer>, <true/>/<false/> or <array> of strings its value, and the
// [audit] table a <dict>. The values are encoded as TOML and decoded by
// the managed file's strict decoder, so a key the file refuses is refused
// here too (named by file and key; a plist has no lines to name). A
// profile also carries keys of its own (PayloadUUID and the like), which
// macOS writes into the same domain: those are skipped.
func ParseManagedPlist(name string, data []byte) (*Managed, error) {
	if len(data) > MaxFileSize {
		return nil, &ParseError{File: name, Err: fmt.Errorf("larger than %d bytes", MaxFileSize)}
	}
	root, err := decodePlist(data)
	if err != nil {
		return nil, &ParseError{File: name, Err: err}
	}
	dict, ok := root.(map[string]any)
	if !ok {
		return nil, &ParseError{File: name, Err: errors.New("the property list is not a dictionary")}
	}
	for k := range dict {
		if profileKeys[k] {
			delete(dict, k)
		}
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(dict); err != nil {
		return nil, &ParseError{File: name, Err: err}
	}
	m, err := ParseManaged(name, buf.Bytes())
	if err != nil {
		return nil, dropLines(err)
	}
	return m, nil
}

// profileKeys are what a configuration profile or macOS adds to a managed
// domain beside the payload's own keys.
var profileKeys = map[string]bool{
	"PayloadUUID": true, "PayloadIdentifier": true, "PayloadType": true, "PayloadVersion": true,
	"PayloadDisplayName": true, "PayloadEnabled": true, "PayloadOrganization": true,
	"PayloadDescription": true, "PayloadScope": true,
}

// dropLines removes the TOML line numbers from the violations in err: they
// count lines of the encoded form, not of the property list.
func dropLines(err error) error {
	var out []error
	for _, e := range unjoin(err) {
		var v *Violation
		if errors.As(e, &v) {
			c := *v
			c.Line = 0
			out = append(out, &c)
			continue
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// maxPlistDepth bounds nesting while decoding, as MaxNesting bounds TOML.
const maxPlistDepth = 8

// decodePlist decodes an XML property list's root value into Go values:
// map[string]any, []any, string, int64, bool, float64. <date> and <data>
// are refused (no Floor key holds one).
func decodePlist(data []byte) (any, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil, errors.New("no <plist> element")
		}
		if err != nil {
			return nil, fmt.Errorf("not an XML property list: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != "plist" {
				return nil, fmt.Errorf("not a property list: root <%s>", se.Name.Local)
			}
			v, err := plistValue(d, nil, 0)
			if err != nil {
				return nil, err
			}
			return v, nil
		}
	}
}

// plistValue reads the next value element (start already consumed when
// start is non-nil).
func plistValue(d *xml.Decoder, start *xml.StartElement, depth int) (any, error) {
	if depth > maxPlistDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxPlistDepth)
	}
	if start == nil {
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, fmt.Errorf("reading the property list: %w", err)
			}
			if se, ok := tok.(xml.StartElement); ok {
				start = &se
				break
			}
		}
	}
	switch start.Name.Local {
	case "dict":
		m := map[string]any{}
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, fmt.Errorf("reading a <dict>: %w", err)
			}
			switch t := tok.(type) {
			case xml.EndElement:
				return m, nil
			case xml.StartElement:
				if t.Name.Local != "key" {
					return nil, fmt.Errorf("<%s> where a <key> was expected", t.Name.Local)
				}
				var k string
				if err := d.DecodeElement(&k, &t); err != nil {
					return nil, err
				}
				v, err := plistValue(d, nil, depth+1)
				if err != nil {
					return nil, fmt.Errorf("key %q: %w", k, err)
				}
				m[k] = v
			}
		}
	case "array":
		var a []any
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, fmt.Errorf("reading an <array>: %w", err)
			}
			switch t := tok.(type) {
			case xml.EndElement:
				if a == nil {
					a = []any{}
				}
				return a, nil
			case xml.StartElement:
				v, err := plistValue(d, &t, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
		}
	case "string", "integer", "real":
		var s string
		if err := d.DecodeElement(&s, start); err != nil {
			return nil, err
		}
		switch start.Name.Local {
		case "integer":
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("<integer>%s</integer>: not an integer", s)
			}
			return n, nil
		case "real":
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("<real>%s</real>: not a number", s)
			}
			return f, nil
		}
		return s, nil
	case "true", "false":
		if err := d.Skip(); err != nil {
			return nil, err
		}
		return start.Name.Local == "true", nil
	}
	return nil, fmt.Errorf("<%s> is not a value corral's managed preferences hold", start.Name.Local)
}
