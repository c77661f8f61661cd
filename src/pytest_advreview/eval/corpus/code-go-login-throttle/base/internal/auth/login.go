package auth

import (
	"errors"
	"net/http"
)

// ErrBadCredentials is returned for an unknown user or a wrong password alike.
var ErrBadCredentials = errors.New("bad credentials")

// Checker verifies a user's password.
type Checker interface {
	Check(user, password string) error
}

// LoginHandler serves POST /login. net/http runs each request on its own goroutine.
type LoginHandler struct {
	Checker  Checker
	Sessions *SessionStore
}

func (h *LoginHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user := r.PostFormValue("user")
	if err := h.Checker.Check(user, r.PostFormValue("password")); err != nil {
		http.Error(w, "invalid user or password", http.StatusUnauthorized)
		return
	}
	h.Sessions.Start(w, user)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
