// Package feedback is the in-portal channel from users to the platform team: users file
// bugs, ideas, questions, capacity and image requests, vote and comment; admins set a
// status with a public answer and the author is notified. Every change is audited.
package feedback
