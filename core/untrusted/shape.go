package untrusted

import (
	"errors"
	"fmt"
)

// Limits bound a structured file (TOML or JSON) before any parser sees it:
// a parser's cost grows with nesting much faster than with size (10,000
// nested inline tables, 60 KB, take a TOML parser gigabytes), so a size
// cap alone does not bound it. Zero means no cap for Depth and Items; Size
// must be set.
type Limits struct {
	// Size caps the file in bytes (ReadFile's limit).
	Size int64
	// Depth caps nesting: arrays, objects and inline tables, and in TOML
	// also the segments of a dotted key or table header.
	Depth int
	// Items caps the number of keys, values and elements (each '=', ':'
	// or ',' and each opening bracket counts once; in TOML also each
	// segment of a dotted key or table header, each a table).
	Items int
}

// ErrTooDeep and ErrTooMany are the shape errors of CheckTOML and
// CheckJSON (wrapped in a *ShapeError).
var (
	ErrTooDeep = errors.New("nested too deep")
	ErrTooMany = errors.New("too many items")
)

// ShapeError is content refused by its shape, before parsing: the file
// (when read by ReadTOML or ReadJSON) and the 1-based line.
type ShapeError struct {
	Path string
	Line int
	What string
	Err  error // ErrTooDeep or ErrTooMany
}

func (e *ShapeError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.What)
	}
	return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.What)
}
func (e *ShapeError) Unwrap() error { return e.Err }

// ReadTOML reads the TOML file at path as ReadFile does (regular file,
// non-blocking open, at most lim.Size bytes) and checks its shape with
// CheckTOML: what it returns is safe to hand to a TOML parser. Errors
// name the file; a missing file wraps fs.ErrNotExist.
func ReadTOML(path string, lim Limits) ([]byte, error) {
	return readShaped(path, lim, CheckTOML)
}

// ReadJSON is ReadTOML for a JSON file (CheckJSON).
func ReadJSON(path string, lim Limits) ([]byte, error) {
	return readShaped(path, lim, CheckJSON)
}

func readShaped(path string, lim Limits, check func([]byte, Limits) error) ([]byte, error) {
	b, err := ReadFile(path, lim.Size)
	if err != nil {
		return nil, err
	}
	if err := check(b, lim); err != nil {
		var se *ShapeError
		if errors.As(err, &se) {
			se.Path = path
		}
		return nil, err
	}
	return b, nil
}

// counter tracks depth and items for the scanners.
type counter struct {
	lim   Limits
	line  int
	items int
}

func (c *counter) item() *ShapeError {
	c.items++
	if c.lim.Items > 0 && c.items > c.lim.Items {
		return &ShapeError{Line: c.line, What: fmt.Sprintf("more than %d keys, values or elements", c.lim.Items), Err: ErrTooMany}
	}
	return nil
}

func (c *counter) deep(d int) *ShapeError {
	if c.lim.Depth > 0 && d > c.lim.Depth {
		return &ShapeError{Line: c.line, What: fmt.Sprintf("nested more than %d deep", c.lim.Depth), Err: ErrTooDeep}
	}
	return nil
}

// CheckJSON scans JSON text without parsing it and fails when it nests
// deeper than lim.Depth or holds more than lim.Items items (and when it is
// larger than lim.Size, if set). Text inside strings never counts. It does
// not validate: invalid JSON is the parser's to refuse, and on valid JSON
// the depth it counts is the parser's.
func CheckJSON(data []byte, lim Limits) error {
	if err := checkSize(data, lim); err != nil {
		return err
	}
	c := counter{lim: lim, line: 1}
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '\n':
			c.line++
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				} else if data[i] == '\n' {
					c.line++ // invalid, but count it for the error's line
				}
			}
		case '[', '{':
			depth++
			if e := c.deep(depth); e != nil {
				return e
			}
			if e := c.item(); e != nil {
				return e
			}
		case ']', '}':
			depth = max(depth-1, 0)
		case ',', ':':
			if e := c.item(); e != nil {
				return e
			}
		}
	}
	return nil
}

func checkSize(data []byte, lim Limits) error {
	if lim.Size > 0 && int64(len(data)) > lim.Size {
		return &ShapeError{Line: 1, What: fmt.Sprintf("larger than %d bytes", lim.Size), Err: ErrTooLarge}
	}
	return nil
}

// CheckTOML scans TOML text without parsing it and fails when it nests
// deeper than lim.Depth or holds more than lim.Items items (and when it is
// larger than lim.Size, if set). Depth is the segments of the current
// table header, plus those of the current dotted key, plus the open arrays
// and inline tables. It skips strings and comments as TOML defines them,
// so text inside a string never counts; on valid TOML it agrees with the
// parser, and on invalid TOML the parser stops at the first error, before
// any nesting the scan did not see (core/config FuzzCheckNesting checks
// that whatever passes decodes no deeper than the cap).
//
// Dots are counted in key and value position alike (a value holds at most
// one dot outside a string, in a float or a time), so the count may be one
// too high per value, never too low.
func CheckTOML(data []byte, lim Limits) error {
	if err := checkSize(data, lim); err != nil {
		return err
	}
	c := counter{lim: lim, line: 1}
	var (
		base    = 0   // levels opened by the last table header
		dots    = 0   // dots in the current key path (or value)
		afterEq bool  // at depth 0: a '=' was seen on this line (so '[' opens a value)
		saved   []int // dots at each open bracket, restored at ',' and at its close
	)
	for i := 0; i < len(data); i++ {
		switch ch := data[i]; ch {
		case '\n':
			c.line++
			if len(saved) == 0 {
				dots, afterEq = 0, false
			}
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			i = SkipTOMLString(data, i, &c.line)
		case '=':
			if len(saved) == 0 {
				afterEq = true
			}
			if e := c.item(); e != nil {
				return e
			}
		case '[':
			if len(saved) == 0 && !afterEq {
				// A table header: [a.b] opens two levels, [[a.b]] three
				// (the array of tables and its element).
				levels := 1
				if i+1 < len(data) && data[i+1] == '[' {
					levels, i = 2, i+1
				}
				i, levels = scanHeader(data, i+1, levels, &c.line)
				base, dots = levels, 0
				if e := c.deep(base + 1); e != nil {
					return e
				}
				for range levels { // each segment of the header is a table
					if e := c.item(); e != nil {
						return e
					}
				}
				continue
			}
			fallthrough
		case '{':
			saved = append(saved, dots)
			if e := c.deep(base + len(saved) + dots + 1); e != nil {
				return e
			}
			if e := c.item(); e != nil {
				return e
			}
		case ']', '}':
			if n := len(saved); n > 0 {
				dots, saved = saved[n-1], saved[:n-1]
			}
		case ',':
			if n := len(saved); n > 0 {
				dots = saved[n-1]
			}
			if e := c.item(); e != nil {
				return e
			}
		case '.':
			dots++
			if e := c.deep(base + len(saved) + dots + 1); e != nil {
				return e
			}
			if e := c.item(); e != nil { // a dotted key's segment is a table
				return e
			}
		}
	}
	return nil
}

// scanHeader reads a table header from data[i] (just past its opening
// brackets) to its closing bracket, adding a level per dot outside quoted
// key segments. It returns the index of the last byte read.
func scanHeader(data []byte, i, levels int, line *int) (int, int) {
	for ; i < len(data); i++ {
		switch data[i] {
		case '"', '\'':
			i = SkipTOMLString(data, i, line)
		case '.':
			levels++
		case ']':
			if i+1 < len(data) && data[i+1] == ']' {
				i++
			}
			return i, levels
		case '\n':
			return i - 1, levels // unterminated: the parser's error
		}
	}
	return i, levels
}

// SkipTOMLString returns the index of the last byte of the string that starts
// at data[i], counting the newlines it spans. Basic strings ("…") honour
// backslash escapes; literal strings ('…') do not; tripled quotes start a
// multi-line string. An unterminated string ends the scan: the parser
// refuses the file there.
func SkipTOMLString(data []byte, i int, line *int) int {
	q := data[i]
	multi := i+2 < len(data) && data[i+1] == q && data[i+2] == q
	if multi {
		i += 3
	} else {
		i++
	}
	for ; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\\' && q == '"':
			i++ // the escaped byte, which may be a quote or a newline
			if i < len(data) && data[i] == '\n' {
				*line++
			}
		case c == '\n':
			if !multi {
				return i - 1 // unterminated: the parser's error; the caller counts the newline
			}
			*line++
		case c == q && !multi:
			return i
		case c == q && i+2 < len(data) && data[i+1] == q && data[i+2] == q:
			// A multi-line string may end with up to two more quotes
			// ("""a""""" is `a""`); they are part of the string.
			i += 2
			for k := 0; k < 2 && i+1 < len(data) && data[i+1] == q; k++ {
				i++
			}
			return i
		}
	}
	return i
}

// StateDepth caps the nesting of corral's own JSON state files (box
// metadata, approvals, learning windows, caches): they nest 4 deep at
// most, so 16 is room to grow and far from what costs a parser anything.
const StateDepth = 16

// State are the limits of one of corral's own JSON state files of at most
// size bytes: StateDepth, and an item per 8 bytes (a key and its value
// take more than that in every file corral writes).
func State(size int64) Limits {
	return Limits{Size: size, Depth: StateDepth, Items: int(size / 8)}
}
