package opener

func platformArgv(path string) []string { return []string{"xdg-open", path} }
