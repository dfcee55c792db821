// Package policy decides, for one tool call, whether it is allowed, denied
// or supervised (needs a person's approval), and whether the calling agent
// may see the tool at all. It is one pure function of the configuration and
// the call: the engine and `warden explain` both use it, so what explain
// says is what the engine does.
//
// Threat model: the decision is only as good as its inputs. The engine
// applies the hard guards (confinement, masks, delete protection, the
// command blocklist, allowed_only) before asking policy, so no policy can
// allow what a hard guard refuses. The configuration reaching Decide has
// already been through the config loader, which refuses a workspace file
// that tries to loosen the user's settings.
//
// Non-goals: auto-approve rules and the approval flow itself (package
// approval); judging commands (package shellpolicy), whose class this
// package only reads.
package policy
