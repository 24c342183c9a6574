package lorryspec

// KeyError is a problem with one key of a spec, for tools that point at
// it. Its message is Err's, which names the key already.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// keyError is err as a problem with key; nil for no error.
func keyError(key string, err error) error {
	if err == nil {
		return nil
	}
	return &KeyError{Key: key, Err: err}
}
