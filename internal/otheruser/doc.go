// Package otheruser runs a process as another user, for the tests that
// check what a server or agent of another user is refused: they listen as
// one. It needs root, and skips the test elsewhere.
package otheruser
