package nn

// HostileCheckpoints lets the external tests craft the same files.
var HostileCheckpoints = hostileCheckpoints
