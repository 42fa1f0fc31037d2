//go:build !darwin

package app

func newLoginItem() LoginItem { return noLogin{} }
