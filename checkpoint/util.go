package checkpoint

import "fmt"

// errorsJoin wraps sentinel with a message naming what is wrong.
func errorsJoin(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}
