package taskexecutor

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// NewTaskStop's stop makes Err context.Canceled and ends the Context with the first reason as
// its cause; the Context also ends with its parent.
func TestNewTaskStop(t *testing.T) {
	s, stop := NewTaskStop(context.Background())
	assert.NoError(t, s.Err())
	assert.NoError(t, s.Check(context.Background()))
	first := errors.New("canceled")
	stop(first)
	stop(errors.New("second"))
	assert.Equal(t, context.Canceled, s.Err())
	assert.Equal(t, context.Canceled, s.Check(context.Background()))
	<-s.Context().Done()
	assert.Same(t, first, context.Cause(s.Context()))

	parent, cancel := context.WithCancel(context.Background())
	s, _ = NewTaskStop(parent)
	cancel()
	<-s.Context().Done()
	assert.NoError(t, s.Err(), "Err is nil unless stop was called")
	assert.Equal(t, context.Canceled, s.Check(context.Background()), "Check sees the parent's end")
}
