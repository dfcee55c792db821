package audit

import "sync"

func syncOnceReset() sync.Once {
	envSecrets = nil
	return sync.Once{}
}
