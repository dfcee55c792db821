package bwrap

// SetMaskHelper turns the mask helper on or off for jails started from now.
func SetMaskHelper(on bool) { useMaskHelper.Store(on) }
