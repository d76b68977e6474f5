//go:build !unix

package cluster_test

import "os"

// freeze does nothing where there is no SIGSTOP: a look at p races with it.
func freeze(*os.Process) error { return nil }

// thaw does nothing, as freeze.
func thaw(*os.Process) error { return nil }
