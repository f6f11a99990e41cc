/** Row types of the dashboard's single sign-on tables (schema migration 0009), as Kysely sees them. Times are epoch ms. */
export interface DashboardUserRow {
  id: string;
  issuer: string;
  subject: string;
  email: string;
  created_at: number;
  last_sign_in_at: number;
}
export interface DashboardMemberRow {
  workspace_id: string;
  /** Lower-cased. */
  email: string;
  role: 'admin' | 'viewer';
  created_at: number;
  updated_at: number;
}
