#include "client/kube_whoami.h"

#include <stdio.h>
#include <string.h>

#include "client/kube_object.h"
#include "util/xalloc.h"

#define REVIEW_PATH "/apis/authentication.k8s.io/v1/selfsubjectreviews"

int kube_whoami(struct kube_client *c, char **username, struct kube_error *err)
{
	*username = NULL;
	json_t *review = NULL;
	int r = kube_request(c, "POST", REVIEW_PATH, "application/json",
			     "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}", &review, err);
	if (r == 0) {
		const char *user = kube_obj_str(review, "status.userInfo.username");
		if (user && *user) {
			*username = xstrdup(user);
		} else {
			snprintf(err->message, sizeof(err->message), "the SelfSubjectReview answer names no username");
			r = -1;
		}
	}
	json_decref(review);
	return r;
}
