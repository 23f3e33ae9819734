package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/daemon"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// podShape is what the other sides' Pods copy from atom's: image,
// priority class and resources.
type podShape struct {
	image         string
	priorityClass string
	resources     corev1.ResourceRequirements
}

func shapeOf(p *corev1.Pod) *podShape {
	return &podShape{image: p.Spec.Containers[0].Image, priorityClass: p.Spec.PriorityClassName,
		resources: *p.Spec.Containers[0].Resources.DeepCopy()}
}

// defaultShape is the Pod shape of the other sides when the atom side does
// not run first: what atom gives a one-GPU task on these nodes.
func defaultShape() *podShape {
	r := corev1.ResourceList{
		k8stest.GPUResource:   resource.MustParse("1"),
		corev1.ResourceCPU:    resource.MustParse("12"),
		corev1.ResourceMemory: resource.MustParse("128Gi"),
	}
	return &podShape{image: image, priorityClass: "atom-normal", resources: corev1.ResourceRequirements{Requests: r, Limits: r.DeepCopy()}}
}

// podSpec is a Pod spec of shape running `sleep infinity` under atom, as
// atom's task Pods do.
func (s *podShape) podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		PriorityClassName: s.priorityClass,
		RestartPolicy:     corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name:      "task",
			Image:     s.image,
			Args:      []string{"run", "--", "sleep", "infinity"},
			Resources: *s.resources.DeepCopy(),
		}},
	}
}

func (s *podShape) pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench"}}, Spec: s.podSpec()}
}

// tunedQPS and tunedBurst are the client rate atom's coordinator uses
// towards a cluster; tunedClient are kube-scheduler's and
// kube-controller-manager's flags for it.
func tunedQPS() int   { return daemon.DefaultKubeQPS }
func tunedBurst() int { return daemon.DefaultKubeBurst }

func tunedClient() []string {
	return []string{fmt.Sprintf("--kube-api-qps=%d", tunedQPS()), fmt.Sprintf("--kube-api-burst=%d", tunedBurst())}
}

// runKube is the kube side: kube-scheduler, with schedulerArgs after its
// defaults, places -tasks Pods of atom's shape.
func runKube(ctx context.Context, shape *podShape, schedulerArgs []string) (result, error) {
	side := "kube"
	if schedulerArgs != nil {
		side = "kube-tuned"
	}
	c, err := startCluster(ctx, side)
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	if err := c.StartKubeScheduler(ctx, schedulerArgs...); err != nil {
		return result{}, fmt.Errorf("start kube-scheduler: %w", err)
	}
	return measure(ctx, c, side, func() error {
		return parallel(*flagTasks, func(i int) error {
			_, err := c.Admin.CoreV1().Pods(namespace).Create(ctx, shape.pod(fmt.Sprintf("bench-%04d", i)), metav1.CreateOptions{})
			return err
		})
	})
}

// runFloor is the floor side: no scheduler; the bench creates the Pods
// bound already, spread over the nodes.
func runFloor(ctx context.Context, shape *podShape) (result, error) {
	c, err := startCluster(ctx, "floor")
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	return measure(ctx, c, "floor", func() error {
		return parallel(*flagTasks, func(i int) error {
			p := shape.pod(fmt.Sprintf("bench-%04d", i))
			p.Spec.NodeName = nodeName(i % *flagNodes)
			_, err := c.Admin.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
	})
}

// runFloorAtomPods is floor-atom-pods: the floor with the atom side's own
// Pods (their labels, annotations, environment, volumes, bound to the same
// nodes) instead of Pods of their shape: what atom's side would take if
// the coordinator cost nothing.
func runFloorAtomPods(ctx context.Context, pods []corev1.Pod) (result, error) {
	c, err := startCluster(ctx, "floor-atom-pods")
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	return measure(ctx, c, "floor-atom-pods", func() error {
		return parallel(len(pods), func(i int) error {
			p := &corev1.Pod{Spec: *pods[i].Spec.DeepCopy()}
			p.Name, p.Labels, p.Annotations = pods[i].Name, pods[i].Labels, pods[i].Annotations
			_, err := c.Admin.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
	})
}

// gangFeatures turn on kube-scheduler's gang scheduling in v1.37: the
// GenericWorkload feature gate (beta, off by default) in the API server
// and the scheduler (whose default plugins then include GangScheduling),
// and the scheduling.k8s.io/v1beta1 API, whose PodGroups name the gang.
var gangFeatures = "--feature-gates=WatchList=false,GenericWorkload=true"

// runGangKube is the gang-kube side: -tasks/-gang jobs, each a PodGroup
// with a gang policy of minCount -gang and that many Pods naming it;
// kube-scheduler (tuned) places each group all or nothing.
func runGangKube(ctx context.Context, shape *podShape) (result, error) {
	c, err := startCluster(ctx, "gang-kube", gangFeatures, "--runtime-config=scheduling.k8s.io/v1beta1=true")
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	if err := c.StartKubeScheduler(ctx, append(tunedClient(), gangFeatures)...); err != nil {
		return result{}, fmt.Errorf("start kube-scheduler: %w", err)
	}
	return measure(ctx, c, "gang-kube", func() error {
		return parallel(*flagTasks / *flagGang, func(j int) error {
			group := fmt.Sprintf("gang-%04d", j)
			pg := &schedulingv1beta1.PodGroup{
				ObjectMeta: metav1.ObjectMeta{Name: group},
				Spec: schedulingv1beta1.PodGroupSpec{
					SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
						Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(*flagGang)},
					},
					// kube-scheduler refuses a group whose Pods' priority is not the group's.
					PriorityClassName: shape.priorityClass,
				},
			}
			if _, err := c.Admin.SchedulingV1beta1().PodGroups(namespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create PodGroup: %w", err)
			}
			for r := range *flagGang {
				p := shape.pod(fmt.Sprintf("%s-%d", group, r))
				p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group}
				got, err := c.Admin.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
				if err != nil {
					return err
				}
				if got.Spec.SchedulingGroup == nil {
					return fmt.Errorf("the API server dropped Pod %s's schedulingGroup: its GenericWorkload feature gate is off", p.Name)
				}
			}
			return nil
		})
	})
}
