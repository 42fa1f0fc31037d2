//go:build !linux

package egress

func deferAccept(int) error { return nil }
