// Every view of the app and its URL. Pages other than Home load on first visit, so the
// first load stays small as pages grow (builds with their log view, the pipeline editor,
// applications with their tree and diff).
import { lazy, type ComponentType } from 'react';
import { Home } from '../pages/Home';

const Users = lazy(() => import('../pages/Users'));
const APIKeys = lazy(() => import('../pages/APIKeys'));
const Audit = lazy(() => import('../pages/Audit'));
const Settings = lazy(() => import('../pages/Settings'));
const Pipelines = lazy(() => import('../pages/Pipelines'));
const Pipeline = lazy(() => import('../pages/Pipeline'));
const PipelineNew = lazy(() => import('../pages/Pipeline').then((m) => ({ default: m.PipelineNew })));
const Builds = lazy(() => import('../pages/Builds'));
const Build = lazy(() => import('../pages/Build'));
const Runners = lazy(() => import('../pages/Runners'));
const Contexts = lazy(() => import('../pages/Contexts'));
const Runtimes = lazy(() => import('../pages/Runtimes'));
const RuntimeDetail = lazy(() => import('../pages/Runtime'));
const GitOpsWebhook = lazy(() => import('../pages/GitOpsWebhook'));
const GitIntegrations = lazy(() => import('../pages/GitIntegrations'));
const Billing = lazy(() => import('../pages/Billing'));
const SSOSettings = lazy(() => import('../pages/SSOSettings'));
const Teams = lazy(() => import('../pages/Teams'));
const Rules = lazy(() => import('../pages/Rules'));
const Applications = lazy(() => import('../pages/Applications'));
const Application = lazy(() => import('../pages/Application'));
const Environments = lazy(() => import('../pages/Environments'));
const Hub = lazy(() => import('../pages/Hub'));
const HubTemplate = lazy(() => import('../pages/Hub').then((m) => ({ default: m.HubTemplateView })));
const DeliveryPipelines = lazy(() => import('../pages/DeliveryPipelines'));
const DeliveryPipeline = lazy(() => import('../pages/DeliveryPipelines').then((m) => ({ default: m.DeliveryPipelinePage })));
const NewDeliveryPipeline = lazy(() => import('../pages/DeliveryPipelines').then((m) => ({ default: m.NewDeliveryPipeline })));
const CronWorkflows = lazy(() => import('../pages/CronWorkflows'));
const CronWorkflow = lazy(() => import('../pages/CronWorkflows').then((m) => ({ default: m.CronWorkflowPage })));
const WorkflowRun = lazy(() => import('../pages/WorkflowRun'));
const ArchivedWorkflowRun = lazy(() => import('../pages/WorkflowRun').then((m) => ({ default: m.ArchivedWorkflowRun })));
const Products = lazy(() => import('../pages/Products'));
const Dora = lazy(() => import('../pages/Dora'));
const Deployments = lazy(() => import('../pages/Deployments'));
const Helm = lazy(() => import('../pages/Helm'));
const HelmRelease = lazy(() => import('../pages/Helm').then((m) => ({ default: m.HelmReleasePage })));

export interface RouteDef {
  /** Pattern for matchPath: /users, /applications/:name, … */
  path: string;
  title: string;
  component: ComponentType<{ params: Record<string, string> }>;
}

export const routes: RouteDef[] = [
  { path: '/', title: 'Home', component: Home },
  { path: '/runtimes', title: 'Runtimes', component: Runtimes },
  { path: '/runtimes/:name', title: 'Runtime', component: RuntimeDetail },
  { path: '/applications', title: 'Applications', component: Applications },
  { path: '/applications/:runtime/:name', title: 'Application', component: Application },
  { path: '/environments', title: 'Environments', component: Environments },
  { path: '/hub', title: 'Hub', component: Hub },
  { path: '/hub/:name', title: 'Hub template', component: HubTemplate },
  { path: '/delivery-pipelines', title: 'Delivery Pipelines', component: DeliveryPipelines },
  { path: '/delivery-pipelines/new', title: 'New Delivery Pipeline', component: NewDeliveryPipeline },
  { path: '/delivery-pipelines/cron-workflows', title: 'CronWorkflows', component: CronWorkflows },
  { path: '/delivery-pipelines/cron-workflows/:runtime/:namespace/:name', title: 'CronWorkflow', component: CronWorkflow },
  { path: '/delivery-pipelines/:runtime/:namespace/:name', title: 'Delivery Pipeline', component: DeliveryPipeline },
  { path: '/workflows/:runtime/:namespace/:name', title: 'Workflow run', component: WorkflowRun },
  { path: '/archived-workflows/:id', title: 'Archived workflow run', component: ArchivedWorkflowRun },
  { path: '/products', title: 'Products', component: Products },
  { path: '/dora', title: 'DORA metrics', component: Dora },
  { path: '/deployments', title: 'Deployments', component: Deployments },
  { path: '/helm', title: 'Helm releases', component: Helm },
  { path: '/helm/:namespace/:name', title: 'Helm release', component: HelmRelease },
  { path: '/pipelines', title: 'Pipelines', component: Pipelines },
  { path: '/pipelines/new', title: 'New pipeline', component: PipelineNew },
  { path: '/pipelines/:project/:name', title: 'Pipeline', component: Pipeline },
  { path: '/builds', title: 'Builds', component: Builds },
  { path: '/builds/:id', title: 'Build', component: Build },
  { path: '/users', title: 'Users', component: Users },
  { path: '/api-keys', title: 'API keys', component: APIKeys },
  { path: '/audit', title: 'Audit log', component: Audit },
  { path: '/settings', title: 'Settings', component: Settings },
  { path: '/settings/runners', title: 'Runners', component: Runners },
  { path: '/settings/contexts', title: 'Contexts and secrets', component: Contexts },
  { path: '/settings/gitops-webhook', title: 'GitOps webhook', component: GitOpsWebhook },
  { path: '/settings/git', title: 'Git integrations', component: GitIntegrations },
  { path: '/settings/sso', title: 'Single sign-on', component: SSOSettings },
  { path: '/settings/teams', title: 'Teams', component: Teams },
  { path: '/settings/rules', title: 'Rules', component: Rules },
  { path: '/settings/billing', title: 'Plan and usage', component: Billing },
];

export interface NavItem {
  to: string;
  label: string;
  /** Shown next to areas whose API has not landed yet. */
  note?: string;
  adminOnly?: boolean;
}

export const nav: { heading?: string; items: NavItem[] }[] = [
  { items: [{ to: '/', label: 'Home' }] },
  {
    heading: 'Delivery',
    items: [
      { to: '/runtimes', label: 'Runtimes' },
      { to: '/applications', label: 'Applications' },
      { to: '/deployments', label: 'Deployments' },
      { to: '/products', label: 'Products' },
      { to: '/environments', label: 'Environments' },
      { to: '/delivery-pipelines', label: 'Delivery Pipelines' },
      { to: '/hub', label: 'Hub' },
      { to: '/helm', label: 'Helm releases' },
      { to: '/dora', label: 'DORA metrics' },
      { to: '/pipelines', label: 'Pipelines' },
      { to: '/builds', label: 'Builds' },
    ],
  },
  {
    heading: 'Administration',
    items: [
      { to: '/users', label: 'Users' },
      { to: '/api-keys', label: 'API keys' },
      { to: '/audit', label: 'Audit log', adminOnly: true },
      { to: '/settings', label: 'Settings' },
    ],
  },
];
