package app

func preflight() error { return nil }
