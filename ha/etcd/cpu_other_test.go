//go:build !unix

package etcd

func processCPUSeconds() (float64, bool) { return 0, false }
