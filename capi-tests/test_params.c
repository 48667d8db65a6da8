/* fi_getparams and fi_freeparams: the variables `fi_info -e` lists. */
#include "test.h"

/* Finds `name` in a fi_getparams list, or NULL. */
static const struct fi_param *find(const struct fi_param *p, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (p[i].name && strcmp(p[i].name, name) == 0)
			return &p[i];
	return NULL;
}

static int lists_core_and_provider_vars(void)
{
	struct fi_param *p = NULL;
	int n = -1;
	CHECK_OK(fi_getparams(&p, &n));
	CHECK(p != NULL && n > 0);
	const char *names[] = { "FI_PROVIDER", "FI_LOG_LEVEL", "FI_LOG_PROV", "FI_LOG_SUBSYS",
				"FI_OXSHM_MR_MODE" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct fi_param *e = find(p, n, names[i]);
		if (!e)
			fprintf(stderr, "    %s not listed\n", names[i]);
		CHECK(e != NULL);
		CHECK(e->help_string != NULL && e->help_string[0] != '\0');
		CHECK(e->type == FI_PARAM_STRING);
	}
	/* The list ends with a NULL name, as upstream's does. */
	CHECK(p[n].name == NULL);
	fi_freeparams(p);
	return 0;
}

/* Run with FI_OXSHM_MR_MODE=FI_MR_LOCAL: the list shows the value set. */
static int shows_values_from_env(void)
{
	struct fi_param *p = NULL;
	int n = 0;
	CHECK_OK(fi_getparams(&p, &n));
	const struct fi_param *e = find(p, n, "FI_OXSHM_MR_MODE");
	CHECK(e != NULL);
	CHECK_STR(e->value, "FI_MR_LOCAL");
	e = find(p, n, "FI_LOG_PROV");
	CHECK(e != NULL && e->value == NULL);
	fi_freeparams(p);
	return 0;
}

static int null_args(void)
{
	struct fi_param *p = NULL;
	int n = 0;
	CHECK_RC(fi_getparams(NULL, &n), -FI_EINVAL);
	CHECK_RC(fi_getparams(&p, NULL), -FI_EINVAL);
	CHECK(p == NULL);
	fi_freeparams(NULL);
	return 0;
}

static const struct test_case cases[] = {
	CASE(lists_core_and_provider_vars),
	CASE_ENV(shows_values_from_env, "FI_OXSHM_MR_MODE=FI_MR_LOCAL"),
	CASE(null_args),
};

TEST_MAIN(cases)
