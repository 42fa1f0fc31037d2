//go:build !darwin

package config

// systemManaged is the policy in force off macOS: the managed file.
func systemManaged() *Managed {
	m, err := loadManagedFile()
	return ChooseManaged(nil, nil, m, err)
}

// profileStamp is empty: there are no configuration profiles off macOS.
func profileStamp() string { return "" }
