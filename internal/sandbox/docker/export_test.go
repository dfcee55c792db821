package docker

// Internals the external tests look at.
var (
	LabelWorkspace = labelWorkspace
	LabelOwner     = labelOwner
	OwnerLabel     = ownerLabel
)
