package auth

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
)

// SessionStore keeps logged-in sessions in memory, keyed by a random id.
type SessionStore struct {
	mu    sync.Mutex
	users map[string]string
}

func NewSessionStore() *SessionStore {
	return &SessionStore{users: make(map[string]string)}
}

// Start creates a session for user and sets its cookie.
func (s *SessionStore) Start(w http.ResponseWriter, user string) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		panic(err)
	}
	id := hex.EncodeToString(raw)
	s.mu.Lock()
	s.users[id] = user
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{
		Name: "sid", Value: id, Path: "/", HttpOnly: true, Secure: true,
		SameSite: http.SameSiteLaxMode,
	})
}
