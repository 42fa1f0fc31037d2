//go:build !linux

package jsonl

import "errors"

// The short-write child (torn_test.go) needs RLIMIT_FSIZE semantics that
// are only tested on Linux; TestMain still names it on every system.
const shortWriteEnv = "CORRAL_JSONL_TEST_SHORT_WRITE"

func runShortWriter(string) error { return errors.New("the short-write test runs on Linux only") }
