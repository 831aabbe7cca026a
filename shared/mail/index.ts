/** E-mail: the sender (SMTP or .eml files) and the notifications-topic messages. */
export {
  createMailer,
  messageIdFor,
  smtpError,
  type MailConfig,
  type Mailer,
  type MailMessage,
  type SentMail,
} from './mailer.js';
export {
  endpointDisabledSchema,
  grantRequestSchema,
  newNotificationId,
  notificationSchema,
  requestGrant,
  type EndpointDisabled,
  type GrantRequest,
  type Notification,
} from './notifications.js';
