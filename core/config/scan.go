package config

import (
	"errors"

	"github.com/corral-dev/corral/core/untrusted"
)

// MaxFileSize caps a config file: far above any real config, small enough
// that the parser's work on it is bounded.
const MaxFileSize = 256 << 10

// MaxNesting caps how deep a config file may nest: arrays, inline tables
// and the segments of a dotted key or table header together. The schema
// needs 3; the cap is checked before the TOML parser runs, because the
// parser's cost grows with depth faster than with size (5,000 nested
// inline tables take gigabytes; a dotted key of 4,000 segments takes
// seconds, of 16,000 minutes).
const MaxNesting = 32

// MaxItems caps the keys, values and array elements of a config file
// (untrusted.Limits.Items), checked with the nesting before the parser
// runs: a real config holds hundreds; a file at the size cap built of
// tiny items (an array of 29,000 hosts, 21,000 env keys) made the parser
// and the strict decoder work for a second or more.
const MaxItems = 16 << 10

// checkNesting fails when TOML text nests deeper than max (or holds more
// than MaxItems items), before a
// parser sees it: the scan is core/untrusted's CheckTOML (the one home of
// the shape check of every TOML and JSON file corral reads), with the line
// it stopped at.
func checkNesting(data []byte, max int) *ParseError {
	err := untrusted.CheckTOML(data, untrusted.Limits{Depth: max, Items: MaxItems})
	var se *untrusted.ShapeError
	if errors.As(err, &se) {
		return &ParseError{Line: se.Line, Err: errors.New(se.What)}
	}
	if err != nil {
		return &ParseError{Err: err}
	}
	return nil
}

// CheckNesting reports TOML that nests deeper than max, before a parser
// sees it, for other TOML corral reads from a box (core/toolreg reads
// cargo's config files from a golden image).
func CheckNesting(data []byte, max int) error {
	if e := checkNesting(data, max); e != nil {
		return e
	}
	return nil
}

// skipString is untrusted.SkipTOMLString (the scanner's own rule for
// TOML strings), for the trusted-layer editor.
func skipString(data []byte, i int, line *int) int { return untrusted.SkipTOMLString(data, i, line) }
