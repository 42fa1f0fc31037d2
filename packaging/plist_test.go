package packaging

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// parsePlist decodes an XML property list whose top-level value is a dict.
// Values become string, bool, int64, float64, []any or map[string]any;
// data and date stay strings. A repeated key is an error: macOS would keep
// one of them silently.
func parsePlist(r io.Reader) (map[string]any, error) {
	d := xml.NewDecoder(r)
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("looking for <plist>: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != "plist" {
				return nil, fmt.Errorf("root element is <%s>, want <plist>", se.Name.Local)
			}
			break
		}
	}
	v, err := plistValue(d)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("top-level value is %T, want a dict", v)
	}
	return m, nil
}

var errEnd = errors.New("end of container")

// plistValue reads the next value element, or returns errEnd at the end
// element of the enclosing container.
func plistValue(d *xml.Decoder) (any, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil, errEnd
		case xml.StartElement:
			switch t.Name.Local {
			case "dict":
				return plistDict(d)
			case "array":
				var a []any
				for {
					v, err := plistValue(d)
					if errors.Is(err, errEnd) {
						return a, nil
					}
					if err != nil {
						return nil, err
					}
					a = append(a, v)
				}
			case "true", "false":
				if err := d.Skip(); err != nil {
					return nil, err
				}
				return t.Name.Local == "true", nil
			case "string", "data", "date", "integer", "real":
				var s string
				if err := d.DecodeElement(&s, &t); err != nil {
					return nil, err
				}
				switch t.Name.Local {
				case "integer":
					return strconv.ParseInt(strings.TrimSpace(s), 10, 64)
				case "real":
					return strconv.ParseFloat(strings.TrimSpace(s), 64)
				}
				return s, nil
			default:
				return nil, fmt.Errorf("unknown plist element <%s>", t.Name.Local)
			}
		}
		// Character data between elements (indentation), comments: skip.
	}
}

func plistDict(d *xml.Decoder) (map[string]any, error) {
	m := map[string]any{}
	for {
		// A key element, or the end of the dict.
		var key string
		for key == "" {
			tok, err := d.Token()
			if err != nil {
				return nil, err
			}
			switch t := tok.(type) {
			case xml.EndElement:
				return m, nil
			case xml.StartElement:
				if t.Name.Local != "key" {
					return nil, fmt.Errorf("dict holds <%s> where a <key> belongs", t.Name.Local)
				}
				if err := d.DecodeElement(&key, &t); err != nil {
					return nil, err
				}
				if key == "" {
					return nil, errors.New("empty <key>")
				}
			}
		}
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		v, err := plistValue(d)
		if errors.Is(err, errEnd) {
			return nil, fmt.Errorf("key %q has no value", key)
		}
		if err != nil {
			return nil, fmt.Errorf("value of %q: %w", key, err)
		}
		m[key] = v
	}
}
