package kube

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/pkg/structs"
)

// The extra fields of a service-account token bound to a Pod, as the API
// server's TokenReview reports them.
const (
	extraPodName = "authentication.kubernetes.io/pod-name"
	extraPodUID  = "authentication.kubernetes.io/pod-uid"
)

// tokenVolume is the projected volume of a task's Pod holding its service
// account's token bound to the Pod (audience TokenAudience, TokenExpiry
// seconds; the kubelet renews it), and its read-only mount at TokenPath.
func tokenVolume() (corev1.Volume, corev1.VolumeMount) {
	exp := int64(TokenExpiry)
	mode := int32(0o444) // atom may run as any user in the image
	v := corev1.Volume{Name: "atom-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
			Audience: TokenAudience, ExpirationSeconds: &exp, Path: path.Base(TokenPath)}}},
	}}}
	return v, corev1.VolumeMount{Name: v.Name, MountPath: path.Dir(TokenPath), ReadOnly: true}
}

// TokenRefused is a token ReviewPodToken does not accept: Invalid when the
// API server does not authenticate it for audience atom (401), otherwise
// it is valid but not the token of the task's current Pod (403).
type TokenRefused struct {
	Invalid bool
	Msg     string
}

func (e *TokenRefused) Error() string { return e.Msg }

// ReviewPodToken checks that jwt is a token the API server authenticates
// for audience atom (TokenReview), of a service account of the backend's
// namespace, bound to task id's Pod: the name kube.PodName(id) and the
// UID of the Pod the informer sees for the task's allocation whose token
// is allocToken. It returns nil when so, a *TokenRefused when not, and
// any other error when it cannot tell now (the TokenReview failed; the
// Pod not seen yet): retry.
func (b *Backend) ReviewPodToken(ctx context.Context, id structs.TaskID, allocToken, jwt string) error {
	tr := &authv1.TokenReview{Spec: authv1.TokenReviewSpec{Token: jwt, Audiences: []string{TokenAudience}}}
	res, err := b.cfg.Client.AuthenticationV1().TokenReviews().Create(ctx, tr, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("cluster %s: token review: %w", b.cfg.Cluster, err)
	}
	st := res.Status
	if !st.Authenticated {
		why := ""
		if st.Error != "" {
			why = " (" + st.Error + ")"
		}
		return &TokenRefused{Invalid: true, Msg: fmt.Sprintf("cluster %s does not accept the service-account token for audience %s%s: "+
			"send the token of the task's Pod from ATOM_TOKEN_FILE (a projected token, audience %s), not expired", b.cfg.Cluster, TokenAudience, why, TokenAudience)}
	}
	if !slices.Contains(st.Audiences, TokenAudience) {
		return &TokenRefused{Invalid: true, Msg: fmt.Sprintf("the service-account token is for audiences %v, not %s: send the projected token of ATOM_TOKEN_FILE", st.Audiences, TokenAudience)}
	}
	name := PodName(id)
	prefix := "system:serviceaccount:" + b.cfg.Namespace + ":"
	if !strings.HasPrefix(st.User.Username, prefix) {
		return &TokenRefused{Msg: fmt.Sprintf("the token is %s's, not a service account's of namespace %s, where task %s's Pod runs", st.User.Username, b.cfg.Namespace, id)}
	}
	pods, uids := st.User.Extra[extraPodName], st.User.Extra[extraPodUID]
	if len(pods) != 1 || len(uids) != 1 {
		return &TokenRefused{Msg: fmt.Sprintf("the token of %s is bound to no Pod: send the token of task %s's Pod %s/%s (ATOM_TOKEN_FILE), which is bound to it",
			st.User.Username, id, b.cfg.Namespace, name)}
	}
	if pods[0] != name {
		return &TokenRefused{Msg: fmt.Sprintf("the token is bound to Pod %s/%s, not to task %s's Pod %s: each Pod gets only its own task's token", b.cfg.Namespace, pods[0], id, name)}
	}
	o, ok, err := b.pods.GetByKey(b.cfg.Namespace + "/" + name)
	p, _ := o.(*corev1.Pod)
	if err != nil || !ok || p == nil {
		return fmt.Errorf("pod %s/%s of task %s is not seen here yet: retry", b.cfg.Namespace, name, id)
	}
	current := p.Annotations[LabelTask] == string(id) && p.Annotations[AnnotationAlloc] == allocHash(allocToken)
	switch {
	case string(p.UID) == uids[0] && !current:
		return &TokenRefused{Msg: fmt.Sprintf("the token is bound to Pod %s/%s (uid %s) of an earlier allocation of task %s: it gets no token", b.cfg.Namespace, name, uids[0], id)}
	case string(p.UID) != uids[0] && !current:
		return fmt.Errorf("the Pod %s/%s of task %s's current allocation is not seen here yet: retry", b.cfg.Namespace, name, id)
	case string(p.UID) != uids[0]:
		return &TokenRefused{Msg: fmt.Sprintf("the token is bound to Pod %s/%s uid %s, but task %s's Pod is uid %s: an earlier Pod of the same name gets no token",
			b.cfg.Namespace, name, uids[0], id, p.UID)}
	}
	return nil
}
