"""``{% root_url 'name' %}``: an installation page's URL from inside a project's pages;
``{% project_url project 'name' %}``: a URL inside another project (workbench.project_urls)."""

from django import template

from workbench import project_urls

register = template.Library()


@register.simple_tag
def root_url(viewname, *args, **kwargs):
    return project_urls.root_url(viewname, *args, **kwargs)


@register.simple_tag
def project_url(project, viewname, *args, **kwargs):
    return project_urls.project_url(project, viewname, *args, **kwargs)


@register.simple_tag
def project_home_url(project):
    return project_urls.project_home_url(project)
